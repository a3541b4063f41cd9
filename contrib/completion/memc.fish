# SPDX-License-Identifier: MIT
# fish completion for memc(1). Installed as
# $(PREFIX)/share/fish/vendor_completions.d/memc.fish; to try it from a
# checkout: source contrib/completion/memc.fish
#
# The -W names come from `memc --list-diagnostics`, so they are never out
# of date.

# "name<TAB>summary" for each warning.
function __memc_warnings
    memc --list-diagnostics 2>/dev/null | awk '$2 == "warning" { n = $1; sub(/^[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print n "\t" $0 }'
end

# .mem files and folders only (fish's own suffix helper adds other files).
function __memc_mem_files
    for f in (__fish_complete_path (commandline -ct))
        string match -q -r '(\.mem|/)\t' -- $f; and echo $f
    end
end

function __memc_wflags
    for w in (__memc_warnings)
        echo -- "-W$w"
        echo -- "-Wno-$w"
        echo -- "-Werror=$w"
        echo -- "-Wno-error=$w"
    end
end

set -l cmds check report list import fmt fit search lsp compare help
complete -c memc -f
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a check -d 'type-check and analyse; print diagnostics only'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a report -d 'also print the per-device memory report'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a list -d 'list models, GPUs, layers, optimizers and precisions'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a import -d 'print .mem text from framework configs'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a fmt -d 'print files in the canonical layout'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a fit -d 'what fits, and the smallest changes that make a job fit'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a lsp -d 'serve the Language Server Protocol'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a compare -d 'predicted against a PyTorch memory snapshot'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a help -d 'print the usage of a command'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -l help -d 'print the usage'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -l version -d 'print the version'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -l list-diagnostics -d 'print every diagnostic name'

set -l cmd '__fish_seen_subcommand_from check report list'
complete -c memc -n "__fish_seen_subcommand_from check" -l format -x -a 'text json sarif github' -d 'output format'
complete -c memc -n "__fish_seen_subcommand_from report" -l format -x -a 'text json html' -d 'output format'
complete -c memc -n "__fish_seen_subcommand_from list" -l format -x -a 'text json' -d 'output format'
complete -c memc -n $cmd -l explain -d "show each component's formula and inputs"
complete -c memc -n $cmd -s I -x -a '(__fish_complete_directories)' -d 'add DIR to the import search path'
complete -c memc -n $cmd -l stdlib -x -a '(__fish_complete_directories)' -d 'use DIR as the standard library'
complete -c memc -n $cmd -l max-errors -x -d 'stop after N errors (0: no limit)'
complete -c memc -n $cmd -l color -x -a 'auto always never' -d 'colour the diagnostics'
complete -c memc -n $cmd -l dump-ast -d 'print the syntax tree and stop'
complete -c memc -n $cmd -s w -d 'silence all warnings'
complete -c memc -n $cmd -o Werror -d 'turn every warning into an error'
complete -c memc -n "$cmd; and string match -q -- '-W*' (commandline -ct)" -x -a '(__memc_wflags)'
complete -c memc -n $cmd -a '(__memc_mem_files)'

complete -c memc -n '__fish_seen_subcommand_from import' -l name -x -d 'the model name'
complete -c memc -n '__fish_seen_subcommand_from import' -s o -r -F -d 'write the text to FILE'
complete -c memc -n '__fish_seen_subcommand_from import' -F

complete -c memc -n '__fish_seen_subcommand_from compare' -l job -x -d 'the train block to compare'
complete -c memc -n '__fish_seen_subcommand_from compare' -l stage -x -d 'the pipeline stage'
complete -c memc -n '__fish_seen_subcommand_from compare' -l device -x -d 'the device of the snapshot'
complete -c memc -n '__fish_seen_subcommand_from compare' -l format -x -a 'text json' -d 'output format'
complete -c memc -n '__fish_seen_subcommand_from compare' -s I -x -a '(__fish_complete_directories)' -d 'add DIR to the import search path'
complete -c memc -n '__fish_seen_subcommand_from compare' -F
complete -c memc -n '__fish_seen_subcommand_from fit' -l job -x -d 'only the train block NAME'
complete -c memc -n '__fish_seen_subcommand_from fit' -l format -x -a 'text json' -d 'output format'
complete -c memc -n '__fish_seen_subcommand_from fit' -s I -x -a '(__fish_complete_directories)' -d 'add DIR to the import search path'
complete -c memc -n '__fish_seen_subcommand_from fit' -l stdlib -x -a '(__fish_complete_directories)' -d 'use DIR as the standard library'
complete -c memc -n '__fish_seen_subcommand_from fit' -a '(__memc_mem_files)'
complete -c memc -n "not __fish_seen_subcommand_from $cmds" -a search -d 'the fastest layouts that fit, as train blocks'
complete -c memc -n '__fish_seen_subcommand_from search' -l job -x -d 'only the train block NAME'
complete -c memc -n '__fish_seen_subcommand_from search' -l gpus -x -d 'cluster sizes to search, N,...'
complete -c memc -n '__fish_seen_subcommand_from search' -l top -x -d 'how many layouts to print'
complete -c memc -n '__fish_seen_subcommand_from search' -l mfu -x -d 'the fraction of peak the math runs at'
complete -c memc -n '__fish_seen_subcommand_from search' -l stats -d 'the counts and the time on standard error'
complete -c memc -n '__fish_seen_subcommand_from search' -l format -x -a 'text json csv' -d 'output format'
complete -c memc -n '__fish_seen_subcommand_from search' -s I -x -a '(__fish_complete_directories)' -d 'add DIR to the import search path'
complete -c memc -n '__fish_seen_subcommand_from search' -l stdlib -x -a '(__fish_complete_directories)' -d 'use DIR as the standard library'
complete -c memc -n '__fish_seen_subcommand_from search' -a '(__memc_mem_files)'
