" Vim syntax file
" Language: memc .mem (docs/language.md)
" Keep the keyword list equal to docs/language.md's: tests/lsp/check-editors.sh
" compares them.

if exists('b:current_syntax')
  finish
endif

syn keyword memDecl       import let gpu precision train layer model optimizer nextgroup=memDeclName skipwhite
syn keyword memStatement  param saves temp state input repeat warn
syn keyword memConditional if else
syn keyword memBoolean    true false

" The name a declaration introduces: `train sft`, `gpu H100 : ...`.
syn match memDeclName     /\<\h\w*\>/ contained

syn match memNumber       /\<\d\+\(_\d\+\)*\(\.\d\+\(_\d\+\)*\)\=\([eE][-+]\=\d\+\)\=/ nextgroup=memUnit,memPercent skipwhite
" `x` in `8 x A100_80GB` is the cluster operator, not a unit.
syn match memUnit         /\<\(x\>\)\@!\a\+\>/ contained
syn match memPercent      /%/ contained

syn match memEscape       /\\[\\"nt]/ contained
syn match memBadEscape    /\\[^\\"nt]/ contained
syn region memString      start=/"/ skip=/\\\\\|\\"/ end=/"/ end=/$/ oneline contains=memEscape,memBadEscape

syn keyword memTodo       TODO FIXME XXX NOTE contained
syn match memComment      "//.*$" contains=memTodo,@Spell
syn match memComment      "#.*$" contains=memTodo,@Spell
syn region memComment     start="/\*" end="\*/" contains=memTodo,@Spell

hi def link memDecl        Keyword
hi def link memStatement   Statement
hi def link memConditional Conditional
hi def link memBoolean     Boolean
hi def link memDeclName    Function
hi def link memNumber      Number
hi def link memUnit        Type
hi def link memPercent     Type
hi def link memEscape      SpecialChar
hi def link memBadEscape   Error
hi def link memString      String
hi def link memTodo        Todo
hi def link memComment     Comment

let b:current_syntax = 'mem'
