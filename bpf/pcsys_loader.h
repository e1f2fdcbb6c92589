/* pcsys_loader.h: what the four files of the loader `pcsys-capture` share: pcsys.c (the command
 * line, the BPF program, the run), pcsys_out.c (process images and their shim-format logs, file
 * paths), pcsys_frames.c (modules, frames and signatures) and pcsys_unwind.c (call paths of code
 * without frame pointers, from copied user stacks). */
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
/* The GNU build id of the ELF file `path` zero-padded into `id` (1), or 0 when it has none. */
int module_build_id(const char *path, unsigned char id[PCSYS_BUILD_ID_SIZE]);
/* Does the ELF file `path` have a PT_INTERP (1), none (0), or can it not be read (-1)? */
int elf_has_interp(const char *path);

/* ---------- pcsys_unwind.c ---------- */

/* Hold an event with PCSYS_F_USTACK until its stack arrives. */
void unwind_keep(const struct pcsys_event *e);
/* A PCSYS_USTACK record: the event held for its thread, its frames replaced by the unwound call
 * path when the unwinding found one (NULL: no event was held). Valid until the next call. */
const struct pcsys_event *unwind_take(const void *data, size_t size);
/* Send every event still held (the end of the run) to out_event as it is. */
void unwind_drain(void);
/* out_event of `e` with its raw-address frames turned into (build id, offset) through its
 * process's latest PCSYS_MAPS record, where the module has a build id (the kernel could not read
 * the note, or the frames came from the unwinding). */
int unwind_emit(const struct pcsys_event *e);
/* Forget process `pid`'s modules (it exec'd or ended). */
void unwind_forget(uint32_t pid);
/* A PCSYS_MAPS record: process `m->pid`'s modules from now on. */
void unwind_maps(const struct pcsys_maps *m);
/* Learn the path of file (dev in kernel encoding, ino); of a program and its interpreter; the
 * loader's own modules and the preloaded shim (at start; `preload` may be NULL). */
void unwind_learn(uint64_t dev, uint64_t ino, const char *path);
void unwind_learn_exec(const char *exe);
void unwind_init(const char *preload);

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
