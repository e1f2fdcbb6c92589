"""Record: what a program writes, with the program context (PC) of each write.

* :mod:`.filetrace` runs a program under the pcshim LD_PRELOAD shim and converts the shim's logs
  into a file-level trace (``pcstream record``); :mod:`.symbols` names the frames of its PC table.
* :mod:`.blockcapture` (``record --block``) also captures the block I/O of the same run on a real ext4
  (loop device): :mod:`.tracefs` records the bios, :mod:`.ext4layout` classes their addresses.
* :mod:`.purity` measures how well PC signatures predict what a write is (RocksDB ground truth):
  ``python -m pcstream.record.purity``.

The trace formats are in docs/FORMATS.md; the shim, its methods and its gaps in docs/RECORD.md.
"""
