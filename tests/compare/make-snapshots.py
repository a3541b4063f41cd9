#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-made snapshots of tests/compare/ (not run by the tests).

They have the schema of torch.cuda.memory._snapshot() (PyTorch 2.5:
"segments" with their "blocks", "device_traces" with one list of events per
device) for one training step of tests/compare/tiny.mem's `tiny` job, with
one tensor per kind rather than one per parameter, so that the trace stays
short (24 events) and every rule of docs/compare.md is exercised:
weights and AdamW's states from the first step (before the trace),
a forward temporary, the loss, the autograd
engine's allocations without Python frames (a temporary and the gradients
that outlive the backward), a foreach temporary of AdamW,
zero_grad freeing the gradients, and 512 bytes allocated before the trace
started. tests/validation/snapshot.py records a real one on a GPU.

    python3 tests/compare/make-snapshots.py
"""
import json
import os

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


SCRIPT = frame("tests/validation/snapshot.py", 90, "train_step")
APPLY = [frame("torch/nn/modules/module.py", 942, "_apply"),
         frame("torch/nn/modules/module.py", 1174, "to"), SCRIPT]
FORWARD = [frame("torch/nn/modules/linear.py", 125, "forward"),
           frame("torch/nn/modules/module.py", 1747, "_call_impl"), SCRIPT]
LOSS = [frame("torch/nn/functional.py", 3479, "cross_entropy"),
        frame("torch/nn/modules/loss.py", 1293, "forward"), SCRIPT]
ADAMW_INIT = [frame("torch/optim/adamw.py", 149, "_init_group"),
              frame("torch/optim/adamw.py", 215, "step"), SCRIPT]
ADAMW_FOREACH = [frame("torch/optim/adamw.py", 560, "_multi_tensor_adamw"),
                 frame("torch/optim/adamw.py", 215, "step"), SCRIPT]
ZERO_GRAD = [frame("torch/optim/optimizer.py", 980, "zero_grad"), SCRIPT]

SEG = {"w": 0x7f0000000000, "a": 0x7f0010000000, "l": 0x7f0020000000,
       "b": 0x7f0030000000, "o": 0x7f0040000000, "s": 0x7f0050000000}


W, ACT, LOGIT, GRAD, STATE = 58832896, 7 * MiB, 98304 * 1024, 58832896, 58832896


def first_step():
    """What the first step left behind: the weights and AdamW's states.
    Recording starts after it (as tests/validation/snapshot.py does), so
    these are in the segments only, with the frames that allocated them."""
    return [
        ("segment_alloc", "w", 0, 58 * MiB, APPLY),
        ("alloc", "w", 0, W, APPLY),
        ("segment_alloc", "o", 0, 168 * MiB, ADAMW_INIT),
        ("alloc", "o", 0, STATE, ADAMW_INIT),
        ("alloc", "o", STATE, STATE, ADAMW_INIT),
    ]


def second_step():
    """(action, segment, offset, size, frames) of the step recorded, in order."""
    return [
        ("segment_alloc", "a", 0, 20 * MiB, FORWARD),
        ("alloc", "a", 0, ACT, FORWARD),
        ("alloc", "a", ACT, ACT, FORWARD),
        ("alloc", "a", 2 * ACT, 2 * MiB, FORWARD),
        ("free_requested", "a", 2 * ACT, 2 * MiB, FORWARD),
        ("free_completed", "a", 2 * ACT, 2 * MiB, FORWARD),
        ("segment_alloc", "l", 0, 2 * LOGIT, FORWARD),
        ("alloc", "l", 0, LOGIT, FORWARD),
        ("alloc", "l", LOGIT, LOGIT, LOSS),
        ("segment_alloc", "b", 0, 196 * MiB, []),
        ("alloc", "b", 0, LOGIT, []),
        ("free_requested", "l", LOGIT, LOGIT, []),
        ("free_completed", "l", LOGIT, LOGIT, []),
        ("free_completed", "l", 0, LOGIT, []),
        ("alloc", "b", LOGIT, GRAD, []),
        ("free_completed", "b", 0, LOGIT, []),
        ("free_completed", "a", ACT, ACT, []),
        ("free_completed", "a", 0, ACT, []),
        ("alloc", "o", 2 * STATE, STATE, ADAMW_FOREACH),
        ("free_completed", "o", 2 * STATE, STATE, ADAMW_FOREACH),
        ("free_requested", "b", LOGIT, GRAD, ZERO_GRAD),
        ("free_completed", "b", LOGIT, GRAD, ZERO_GRAD),
        ("segment_free", "l", 0, 2 * LOGIT, []),
        ("snapshot", None, 0, 0, []),
    ]


def event(action, seg, offset, size, frames, t):
    e = {"action": action, "addr": SEG[seg] + offset if seg else 0, "size": size,
         "stream": 0, "time_us": 1000 * t, "frames": frames}
    return e


def segments(events):
    """The end state: each segment still mapped, with its live blocks."""
    total, live = {}, {}
    for action, seg, offset, size, frames in events:
        if action == "segment_alloc":
            total[seg] = size
            live[seg] = {}
        elif action == "segment_free":
            del total[seg]
        elif action == "alloc":
            live[seg][offset] = (size, frames)
        elif action == "free_completed":
            del live[seg][offset]
    out = [{"device": 0, "address": SEG["s"], "total_size": 2 * MiB, "allocated_size": 512,
            "active_size": 512, "requested_size": 8, "stream": 0, "segment_type": "small",
            "segment_pool_id": [0, 0], "is_expandable": False, "frames": [],
            "blocks": [{"address": SEG["s"], "size": 512, "requested_size": 8,
                        "state": "active_allocated", "frames": []},
                       {"address": SEG["s"] + 512, "size": 2 * MiB - 512, "requested_size": 0,
                        "state": "inactive", "frames": []}]}]
    for seg in sorted(total):
        blocks, at = [], 0
        for offset in sorted(live[seg]):
            size, frames = live[seg][offset]
            if offset > at:
                blocks.append({"address": SEG[seg] + at, "size": offset - at,
                               "requested_size": 0, "state": "inactive", "frames": []})
            blocks.append({"address": SEG[seg] + offset, "size": size, "requested_size": size,
                           "state": "active_allocated", "frames": frames})
            at = offset + size
        if at < total[seg]:
            blocks.append({"address": SEG[seg] + at, "size": total[seg] - at,
                           "requested_size": 0, "state": "inactive", "frames": []})
        used = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        out.append({"device": 0, "address": SEG[seg], "total_size": total[seg],
                    "allocated_size": used, "active_size": used, "requested_size": used,
                    "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                    "is_expandable": False, "frames": [], "blocks": blocks})
    return out


def write(name, snap):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")


def main():
    events = second_step()
    snap = {"segments": segments(first_step() + events),
            "device_traces": [[event(*e, t) for t, e in enumerate(events)]],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None}}
    write("tiny.json", snap)
    write("no-trace.json", {"segments": snap["segments"]})
    bare = [(a, seg, off, size, []) for a, seg, off, size, _ in second_step()]
    write("no-frames.json", {"segments": snap["segments"],
                             "device_traces": [[event(*e, t) for t, e in enumerate(bare)]]})
    events = second_step()[:-1] * 2 + second_step()[-1:]
    write("two-steps.json", {"segments": snap["segments"],
                             "device_traces": [[event(*e, t) for t, e in enumerate(events)]]})


if __name__ == "__main__":
    main()
