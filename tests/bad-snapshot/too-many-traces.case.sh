# 65,538 traces: the last one's index, which the replay would pick as the
# device, is past any device index (0 to 65536, SNAP_MAX_DEVICE), where a
# segment's 'device' may not go either.
set -u
python3 -c '
import json
t = [[] for _ in range(65537)] + [[{"action": "alloc", "addr": 1, "size": 10}]]
json.dump({"segments": [{"device": 0, "total_size": 100, "allocated_size": 0}], "device_traces": t},
          open("'"$SCRATCH"'/snap.json", "w"))'
$MEMC compare --job tiny tests/compare/tiny.mem "$SCRATCH/snap.json" 2>&1 | sed "s|$SCRATCH/||"
echo "rc ${PIPESTATUS[0]}"
