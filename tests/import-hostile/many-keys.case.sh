# Big configs in linear time: every JSON key's location was found by a
# scan of all keys (200,000 keys: about a minute), and every YAML alias's
# anchor by a scan of all anchors (60,000 of each: 28 s). Both are maps
# now; 30 s is far above either (well under 1 s here, a few under ASan).
set -u
python3 -c '
import json
json.dump({"k%d" % i: i for i in range(200000)}, open("'"$SCRATCH"'/many.json", "w"))
with open("'"$SCRATCH"'/many.yaml", "w") as f:
    f.write("dynamo_config:\n")
    f.writelines("  a%d: &a%d 1\n" % (i, i) for i in range(100000))
    f.writelines("  b%d: *a0\n" % i for i in range(100000))
'
for f in many.json many.yaml; do
	timeout 30 $MEMC import "$SCRATCH/$f" >/dev/null 2>"$SCRATCH/err"
	echo "$f: rc $? ($(grep -c 'error:' "$SCRATCH/err") errors shown)"
done
