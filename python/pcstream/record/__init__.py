"""Record: what a program writes, with the program context (PC) of each write.

* :mod:`.shimrun` runs a program under the pcshim LD_PRELOAD shim and converts the shim's logs
  into a file-level trace (``pcstream record``); :mod:`.symbols` names the frames of its PC table,
  reading ELF files with :mod:`.elf`; :mod:`.runner` runs the program as a shell runs a job.
* The block I/O of the same run on a real ext4 (``record --block``) is captured by
  :mod:`pcstream.groundtruth`.

The trace formats are in docs/FORMATS.md; the shim, its methods and its gaps in docs/RECORD.md.
"""
