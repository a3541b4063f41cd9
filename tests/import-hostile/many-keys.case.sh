# Big configs in linear time: every JSON key's location was found by a
# scan of all keys (200,000 keys: about a minute), every YAML alias's
# anchor by a scan of all anchors (60,000 of each: 28 s), and every YAML
# event's byte offset by a walk from its line's start (a 1 MB line of
# flow keys: minutes). Maps and a walk on from the last mark now; 30 s is
# far above any (well under 1 s here, a few under ASan).
set -u
python3 -c '
import json
json.dump({"k%d" % i: i for i in range(200000)}, open("'"$SCRATCH"'/many.json", "w"))
with open("'"$SCRATCH"'/many.yaml", "w") as f:
    f.write("dynamo_config:\n")
    f.writelines("  a%d: &a%d 1\n" % (i, i) for i in range(100000))
    f.writelines("  b%d: *a0\n" % i for i in range(100000))
with open("'"$SCRATCH"'/line.yaml", "w") as f:
    f.write("dynamo_config: {" + ", ".join("k%d: %d" % (i, i) for i in range(80000)) + "}\n")
'
for f in many.json many.yaml line.yaml; do
	timeout 30 $MEMC import "$SCRATCH/$f" >/dev/null 2>"$SCRATCH/err"
	echo "$f: rc $? ($(grep -c 'error:' "$SCRATCH/err") errors shown)"
done
