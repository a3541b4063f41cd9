/* SPDX-License-Identifier: MIT */
/*
 * compare_impl.h - what `memc compare` measures in a PyTorch memory
 * snapshot (torch.cuda.memory._snapshot(), saved as JSON): the replay of
 * one device's trace into peaks per phase and bytes per category at the
 * allocated peak. docs/compare.md gives the frame rules and phase markers.
 */
#ifndef MEMC_ANALYZER_CMD_COMPARE_IMPL_H
#define MEMC_ANALYZER_CMD_COMPARE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest device index a snapshot may name (a sanity bound). */
enum { SNAP_MAX_DEVICE = 1 << 16 };

/* The first six are memc's components (enum mem_component), in its order. */
enum snap_cat { SNAP_C_WEIGHTS, SNAP_C_GRADIENTS, SNAP_C_OPTIMIZER, SNAP_C_ACTIVATIONS,
		SNAP_C_LOGITS, SNAP_C_BUFFERS, SNAP_C_OTHER, SNAP_C_UNTRACED, SNAP_C__COUNT };

/* SETUP: before the first forward (model creation, .to(), loading). The
 * other four are memc's step phases (enum mem_phase), in its order. */
enum snap_phase { SNAP_P_SETUP, SNAP_P_FORWARD, SNAP_P_LOSS, SNAP_P_BACKWARD, SNAP_P_OPTIMIZER,
		  SNAP_P__COUNT };

struct snap_measure {
	int device;			/* the device compared */
	bool traced;			/* device_traces present and non-empty for it */
	bool no_traces_key;		/* the snapshot has no device_traces at all */
	bool framed;			/* some allocation has frames: phases and categories known */
	size_t nsegments, nevents;
	uint64_t steps, ooms;
	uint64_t final_allocated;	/* sum of the segments' allocated_size */
	uint64_t final_reserved;	/* sum of the segments' total_size */
	uint64_t base_allocated, base_reserved;	/* live before the trace's first event */
	uint64_t peak_allocated, peak_reserved;
	bool phase_seen[SNAP_P__COUNT];
	uint64_t phase_allocated[SNAP_P__COUNT], phase_reserved[SNAP_P__COUNT];
	uint64_t cat_at_peak[SNAP_C__COUNT];	/* live per category at peak_allocated */
};

/* A snapshot that could not be read: line and column (1-based) of a JSON
 * syntax error, or 0 with @path naming the offending value. The sizes
 * hold the longest text snapshot.c writes (two 20-digit indices in a
 * path; jansson's 160-byte error text), so nothing is cut. */
struct snap_error {
	unsigned line, col;
	char path[128];
	char msg[256];
	bool unreadable;		/* could not be opened: a usage error, 2 */
};

/* Read @file and replay device @device (-1: the first device with trace
 * events, else the first segment's). */
bool snap_measure(const char *file, int device, struct snap_measure *m, struct snap_error *err);
/* The same for a snapshot's JSON text in memory (the fuzz harness). */
bool snap_measure_text(const char *text, size_t len, int device, struct snap_measure *m,
		       struct snap_error *err);

const char *snap_cat_name(enum snap_cat c);
const char *snap_phase_name(enum snap_phase p);

#endif
