# The FQ-13 benchmark command imported, with the model and cluster a user
# adds, predicts what tests/validation/FQ-13.mem (written from train.py's
# code) predicts: the importer says the same things the row file does.
$MEMC import -o $SCRATCH/job.mem tests/config-import/fsdp-qlora-70b.args || exit 1
sed 's|^train job {|import "gpus/nvidia"\nimport "models/llama"\ntrain job {\n  model = llama2_70b\n  cluster = 2 x RTX_3090|' \
	$SCRATCH/job.mem >$SCRATCH/fq13.mem
$MEMC report --format json $SCRATCH/fq13.mem | grep -E '"peak_(allocated|reserved)_bytes"' >$SCRATCH/a
$MEMC report --format json tests/validation/FQ-13.mem | grep -E '"peak_(allocated|reserved)_bytes"' >$SCRATCH/b
cat $SCRATCH/a
cmp -s $SCRATCH/a $SCRATCH/b && echo "same as tests/validation/FQ-13.mem"
