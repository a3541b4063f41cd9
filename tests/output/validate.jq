# SPDX-License-Identifier: MIT
#
# A small JSON Schema validator, for the keywords docs/diagnostics.schema.json
# and sarif-subset.schema.json use: type, const, enum, required, properties,
# additionalProperties: false, items, minimum, pattern and "$ref" to
# "#/$defs/NAME". Anything else in a schema is an error, so a keyword the
# validator does not know cannot be silently ignored.
#
#   jq -r --slurpfile schema S.json [--arg ref '#/$defs/x'] -f validate.jq DOC.json
#
# prints one line per violation ("$.files[0].errors: expected integer"),
# nothing when DOC is valid.

def root: $schema[0];

def known: ["$schema", "$id", "title", "description", "type", "const", "enum",
	    "required", "properties", "additionalProperties", "items", "minimum",
	    "pattern", "$ref", "$defs"];

def resolve($s):
	if $s | has("$ref") then
		($s["$ref"] | ltrimstr("#/$defs/")) as $n
		| root["$defs"][$n] // error("unknown $ref \($s["$ref"])")
	else $s end;

def jtype: if type == "number" and . == floor then "integer" else type end;

def type_ok($t): jtype as $jt
	| [$t] | flatten | any(. == $jt or (. == "number" and $jt == "integer"));

def errs($s0; $p):
	resolve($s0) as $s | . as $x
	| ([$s | keys[] | select(. as $k | known | index([$k]) | not)]
	   | map("schema at \($p): unsupported keyword \(.)"))
	+ (if $s | has("type") and ($x | type_ok($s.type) | not)
	   then ["\($p): expected \($s.type | tostring), got \($x | jtype)"] else [] end)
	+ (if ($s | has("const")) and $x != $s.const
	   then ["\($p): expected \($s.const | tojson)"] else [] end)
	+ (if ($s | has("enum")) and ($s.enum | any(. == $x) | not)
	   then ["\($p): \($x | tojson) is not one of \($s.enum | tojson)"] else [] end)
	+ (if ($x | type) == "object" then
		[($s.required // [])[] | select(. as $k | $x | has($k) | not) | "\($p): missing \(.)"]
		+ (if $s.additionalProperties == false then
			[$x | keys[] | select(. as $k | ($s.properties // {}) | has($k) | not)
			 | "\($p): unexpected member \(.)"]
		   else [] end)
		+ ([($s.properties // {}) | to_entries[] | select(.key as $k | $x | has($k))
		    | . as $e | $x[$e.key] | errs($e.value; "\($p).\($e.key)")] | add // [])
	   else [] end)
	+ (if ($x | type) == "array" and ($s | has("items")) then
		[range(0; $x | length) as $i | $x[$i] | errs($s.items; "\($p)[\($i)]")] | add // []
	   else [] end)
	+ (if ($x | type) == "number" and ($s | has("minimum")) and $x < $s.minimum
	   then ["\($p): \($x) is below \($s.minimum)"] else [] end)
	+ (if ($x | type) == "string" and ($s | has("pattern")) and ($x | test($s.pattern) | not)
	   then ["\($p): \($x | tojson) does not match \($s.pattern)"] else [] end);

errs(if $ARGS.named.ref then {"$ref": $ARGS.named.ref} else root end; "$")[]
