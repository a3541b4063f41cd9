# SPDX-License-Identifier: MIT
# bash completion for memc(1). Installed as
# $(PREFIX)/share/bash-completion/completions/memc; to try it from a
# checkout: source contrib/completion/memc.bash
#
# Plain bash (no bash-completion helpers), so it also works where that
# package is missing. The -W names come from `memc --list-diagnostics` of
# the memc being completed, so they are never out of date.

# The warning names of memc $1 (diagnostics of kind "warning").
_memc_warnings()
{
	"$1" --list-diagnostics 2>/dev/null | awk '$2 == "warning" { print $1 }'
}

# Complete the value $2 of option $1 for command $3; returns 1 when $1
# takes no value.
_memc_value()
{
	local opt=$1 cur=$2 cmd=$3 names
	case $opt in
	--format)
		if [[ $cmd == check ]]; then
			COMPREPLY=($(compgen -W 'text json sarif github' -- "$cur"))
		elif [[ $cmd == report ]]; then
			COMPREPLY=($(compgen -W 'text json html' -- "$cur"))
		elif [[ $cmd == search ]]; then
			COMPREPLY=($(compgen -W 'text json csv' -- "$cur"))
		else
			COMPREPLY=($(compgen -W 'text json' -- "$cur"))
		fi ;;
	--color) COMPREPLY=($(compgen -W 'auto always never' -- "$cur")) ;;
	-I | --stdlib) COMPREPLY=($(compgen -d -- "$cur")) ;;
	--max-errors | --name | --job | --stage | --device | --gpus | --top | --mfu) COMPREPLY=() ;;
	-o) COMPREPLY=($(compgen -f -- "$cur")) ;;
	-Werror | -Wno-error)
		names=$(_memc_warnings "${COMP_WORDS[0]}")
		COMPREPLY=($(compgen -W "$names" -- "$cur")) ;;
	*) return 1 ;;
	esac
	return 0
}

# -W options: -Wname, -Wno-name, -Werror, -Werror=name, -Wno-error=name.
_memc_wflags()
{
	local cur=$1 names w list=(-Werror -w)
	names=$(_memc_warnings "${COMP_WORDS[0]}")
	for w in $names; do
		list+=("-W$w" "-Wno-$w")
	done
	COMPREPLY=($(compgen -W "${list[*]} -Werror= -Wno-error=" -- "$cur"))
	# "-Werror=" waits for a name: no space after it.
	[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
	return 0
}

_memc()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[1]} i opts
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W 'check report list import fmt fit search lsp compare help --help --version --list-diagnostics' -- "$cur"))
		return 0
	fi
	# After "--" every word is a file.
	for ((i = 2; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] && { _memc_files "$cur" "$cmd"; return 0; }
	done
	# "--format=js" reaches us as "--format" "=" "js" (COMP_WORDBREAKS).
	if [[ $cur == = ]]; then
		_memc_value "$prev" "" "$cmd" && return 0
	elif [[ $prev == = ]] && ((COMP_CWORD >= 3)); then
		_memc_value "${COMP_WORDS[COMP_CWORD-2]}" "$cur" "$cmd" && return 0
	elif [[ $cur == -*=* ]]; then
		# "=" not in COMP_WORDBREAKS: the word is "--format=js" whole.
		_memc_value "${cur%%=*}" "${cur#*=}" "$cmd" &&
			COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}") && return 0
	elif [[ $prev != -Werror && $prev != -Wno-error ]]; then
		_memc_value "$prev" "$cur" "$cmd" && return 0
	fi
	case $cur in
	-W*) _memc_wflags "$cur"; return 0 ;;
	-*)
		if [[ $cmd == import ]]; then
			opts='--name -o'
		elif [[ $cmd == compare ]]; then
			opts='--job --stage --device --format -I --stdlib -W -Werror -w --help --'
		elif [[ $cmd == fit ]]; then
			opts='--job --format -I --stdlib --help --'
		elif [[ $cmd == search ]]; then
			opts='--job --gpus --top --mfu --stats --format -I --stdlib --help --'
		else
			opts='--format --explain -I --stdlib -W -Werror -w --max-errors= --color=
				--dump-ast --help --'
		fi
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return 0 ;;
	esac
	_memc_files "$cur" "$cmd"
}

# .mem files and folders (any file for import's CONFIGs and compare's
# SNAPSHOT); "-" is stdin.
_memc_files()
{
	local cur=$1 cmd=$2
	if [[ $cmd == import || $cmd == compare ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	else
		COMPREPLY=($(compgen -f -X '!*.mem' -- "$cur") $(compgen -d -- "$cur"))
	fi
	compopt -o filenames 2>/dev/null
	return 0
}

complete -F _memc memc
