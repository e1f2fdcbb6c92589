"""Ground truth from the kernel: what a real ext4 issues for a program's run, and the model
checked against it.

* :mod:`.loopdev` runs a program on a fresh ext4 (image, loop device, ``mkfs.ext4``, mount) and
  captures the block I/O of that run (``record --block``); :mod:`.agereplay` ages the file system
  first, :mod:`.ext4layout` classes the image's addresses (journal, inode table, ...);
* the bios come from :mod:`.biotracer` (the BPF program of ``bpf/`` on the bio tracepoint: hints
  and file pages too) or :mod:`.tracefs` (a private tracefs instance); :mod:`.bio_to_blocktrace`
  builds the real block trace from the BPF capture and the file-level trace of the same run;
* :mod:`.validation` maps the file-level trace through the model and compares the two block
  traces (``pcstream validate``).

The run under the record shim, with live hints when asked, is given to the capture by
:mod:`pcstream.compose`. Method and results: docs/FSMODEL.md, "Ground truth".
"""
