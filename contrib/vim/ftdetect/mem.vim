" memc .mem files (contrib/vim; see docs/editors.md).
autocmd BufRead,BufNewFile *.mem setfiletype mem
