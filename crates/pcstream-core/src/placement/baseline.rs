//! # baseline — one stream
//!
//! What it does: every host page goes to stream 0; GC copies go back to the same write point
//! (FEMU bbssd's stock FTL). Source: "Baseline" of the PCStream papers (a legacy single-stream SSD).
//! What it sees: nothing. State: none. Parameters: none (`--param gc_mode=substream` gives the
//! papers' "Baseline w/ internal stream").

use super::{Attrs, Placement, WriteInfo};
use crate::units::{LogicalTime, StreamId};

pub struct Baseline;

impl Placement for Baseline {
    fn name(&self) -> &'static str {
        "baseline"
    }
    fn sees(&self) -> Attrs {
        Attrs::NONE
    }
    fn on_write(&mut self, _w: &WriteInfo, _now: LogicalTime) -> StreamId {
        StreamId(0)
    }
    fn state_bytes(&self) -> usize {
        0
    }
}
