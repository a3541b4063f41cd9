# The finetune line imported from torchtune-qlora.yaml, with the model, the
# cluster and the length a user adds, analyses as written.  By hand
# (weights): the 224 NF4 Linears of Llama-2-7B, 6,476,005,376 elements, are
# 3,340,771,328 B in nf4_dq (docs/units.md); the bf16 embedding, head and
# 65 norms 262,410,240 params = 524,820,480 B; the r = 8 adapters on q, k,
# v, o (4 x 65,536 params) and gate, up, down (3 x 120,832) per layer,
# 19,988,480 params = 39,976,960 B: 3,905,568,768 B.
set -u
$MEMC import -o "$SCRATCH/t.mem" tests/config-import/torchtune-qlora.yaml || exit 1
awk '/^import "optimizers"/ { print; print "import \"gpus/nvidia\""; print "import \"models/llama\""; next }
     /^train job/ { print; print "  model = llama2_7b"; print "  cluster = 1 x RTX_4090";
                    print "  seq_len = 512"; next } { print }' "$SCRATCH/t.mem" >"$SCRATCH/u.mem"
$MEMC check -Werror "$SCRATCH/u.mem" && echo "checks clean"
$MEMC report --explain "$SCRATCH/u.mem" | grep -E "weights = |layout"
