/* pcsys_loader.h: what the three files of the loader `pcsys-capture` share: pcsys.c (the command
 * line, the BPF program, the run), pcsys_out.c (process images and their shim-format logs, file
 * paths) and pcsys_frames.c (modules, frames and signatures). */
#ifndef PCSYS_LOADER_H
#define PCSYS_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pcshim.h"
#include "pcsys.h"

/* ---------- pcsys_frames.c ---------- */

/* A frame as the shim writes it in F lines: module id, ELF virtual address, module path. */
struct frame_out {
    uint64_t module;
    uint64_t vaddr;
    const char *path;
};

/* The signature of an event's stack (0: no frames), with at most `max` frames of it in `out`
 * (the ones hashed) and their count in *n. `exe`: the program of the process image (for frames
 * of a static program without a build id). */
uint64_t frames_signature(const struct pcsys_event *e, const char *exe, int frames, struct frame_out *out,
                          int *n);
/* Learn the modules the loader itself has mapped (the C library). */
void frames_init(void);
/* Forget what was read of process `pid`'s mappings (it exec'd or ended). */
void frames_forget(uint32_t pid);
/* Does the ELF file `path` have a PT_INTERP (1), none (0), or can it not be read (-1)? */
int elf_has_interp(const char *path);

/* ---------- pcsys_out.c ---------- */

struct out_opts {
    const char *dir;
    int frames;
    int only_unreachable; /* auto: record only images the shim cannot enter */
};

void out_init(const struct out_opts *o);
/* One event from the ring buffer. Returns 1 when the loader must tell the BPF program to stop
 * sending the calls of `e->pid` (an image left to the shim), else 0. */
int out_event(const struct pcsys_event *e);
/* An image for a process that runs already (--pid, or the child of -- CMD before its exec). */
void out_attach(uint32_t pid);
/* End every image still open (E lines); a warning in the first one when events were lost. */
void out_finish(uint64_t lost);
/* Counts for the summary. */
struct out_counts {
    uint64_t events, records, images, recorded_images, write_bytes;
    int error; /* errno of the first failed write of a log, 0 */
};
struct out_counts out_counts(void);

#endif
