# fsdp_qlora's train.py always gets `rope_cache` (transformers <= 4.39 kept
# per-layer rotary buffers): an imported job on a Qwen2 or Mistral model,
# whose 4.39 classes keep them as Llama's do, checks clean (it was an
# ignored-setting error on every model but Llama), and the report counts
# the buffers, fp32 in both (qlora builds with no torch_dtype; the lora
# command's bf16_autocast keeps fp32): Qwen2.5-7B 28 x 2 x 131072 x 128 x
# 4 B = 3,758,096,384 B, Mistral-7B 32 x 2 x 32768 x 128 x 4 B =
# 1,073,741,824 B on each GPU.
for spec in "qwen2 qwen2_5_7b fsdp-qlora-70b" "mistral mistral_7b fsdp-qlora-defaults"; do
	set -- $spec
	$MEMC import -o $SCRATCH/$1.mem tests/config-import/$3.args || exit 1
	sed "s|^train job {|import \"gpus/nvidia\"\nimport \"models/$1\"\ntrain job {\n  model = $2\n  cluster = 2 x A100_80GB|" \
		$SCRATCH/$1.mem >$SCRATCH/$1-job.mem
	grep -E '^ *rope_cache' $SCRATCH/$1-job.mem
	$MEMC check $SCRATCH/$1-job.mem && echo "$2: checks clean"
	grep -v '^ *rope_cache' $SCRATCH/$1-job.mem >$SCRATCH/$1-none.mem
	with=$($MEMC report --format json $SCRATCH/$1-job.mem | grep -m1 '"weights":' | tr -dc 0-9)
	without=$($MEMC report --format json $SCRATCH/$1-none.mem | grep -m1 '"weights":' | tr -dc 0-9)
	echo "$2: rotary buffers $((with - without)) B per GPU"
done
