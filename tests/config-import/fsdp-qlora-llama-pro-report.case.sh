# The Llama-Pro command imported (tests/config-import/fsdp-qlora-llama-pro.args),
# with the 35-layer model train.py builds (cfg.num_hidden_layers = 35) and
# the cluster a user adds. By hand: each Llama-2-7B layer has 4 x 4096^2 +
# 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 parameters; the three new blocks
# train: 607,150,080 trainable of 6,738,415,616 + 607,150,080 =
# 7,345,565,696; their AdamW states in bf16 (bf16_true: no master), sharded
# over the 2 GPUs: 607,150,080 x 2 x 2 B / 2 = 1,214,300,160 B = 1.13 GiB.
$MEMC import -o $SCRATCH/job.mem tests/config-import/fsdp-qlora-llama-pro.args || exit 1
sed 's|^train job {|import "gpus/nvidia"\nimport "models/llama"\nmodel llama2_7b_pro = Llama(layers = 35, hidden = 4096, heads = 32, ffn = 11008, vocab = 32000, max_pos = 4096)\ntrain job {\n  model = llama2_7b_pro\n  cluster = 2 x RTX_3090|' \
	$SCRATCH/job.mem >$SCRATCH/pro.mem
$MEMC report $SCRATCH/pro.mem | sed "s|$SCRATCH/||"
