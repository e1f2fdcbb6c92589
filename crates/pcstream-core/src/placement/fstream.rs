//! # fstream — file-system metadata, journal and file-name streams
//!
//! What it does: tags each write by what it is: journal → 1, inode table → 2, directory → 3,
//! bitmaps/group descriptors and other metadata → 4; data of a file whose name class matches a
//! configured file-name pattern → 5, a configured extension → 6; other data → 0. Precedence:
//! metadata class first, then the name rule, then the extension rule. Ids above N−1 are clamped.
//! Source: Rho et al., "FStream: Managing Flash Streams in the File System", FAST'18.
//! What it sees: the metadata type and the file class (name/extension class id) of the write.
//! State: the rule lists (O(#rules)); nothing per page.
//! Parameters: `fname_classes` (file-class ids matched by the name pattern, e.g. Cassandra's
//! `commitlog-*`; empty by default), `extn_classes` (ids matched by the extension rule; empty),
//! `journal`, `inode`, `dir`, `misc`, `fname`, `extn` (stream ids, defaults 1–6).
//! Deviations: the name/extension patterns are resolved to file-class ids by the trace (the
//! `pcstream.file_classes` table), not by string matching in the engine.

use super::manual::parse_list;
use super::{Attrs, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::request::meta;
use crate::units::{LogicalTime, StreamId};

pub struct FStream {
    fname_classes: Vec<u32>,
    extn_classes: Vec<u32>,
    /// Streams of journal, inode, dir, misc, fname, extn.
    ids: [u8; 6],
    req_stream: StreamId,
}

impl FStream {
    pub fn new(ctx: &mut PolicyCtx) -> Result<FStream, SimError> {
        let fname: String = ctx.param("fname_classes", String::new())?;
        let extn: String = ctx.param("extn_classes", String::new())?;
        let last = ctx.host_streams.saturating_sub(1);
        let mut ids = [0u8; 6];
        for (i, key) in ["journal", "inode", "dir", "misc", "fname", "extn"]
            .iter()
            .enumerate()
        {
            let s: u32 = ctx.param(key, i as u32 + 1)?;
            ids[i] = s.min(last) as u8;
        }
        Ok(FStream {
            fname_classes: parse_list("fname_classes", &fname)?,
            extn_classes: parse_list("extn_classes", &extn)?,
            ids,
            req_stream: StreamId(0),
        })
    }
}

impl Placement for FStream {
    fn name(&self) -> &'static str {
        "fstream"
    }
    fn sees(&self) -> Attrs {
        Attrs::META.union(Attrs::FILE_CLASS)
    }
    fn on_request(&mut self, req: &RequestInfo, _now: LogicalTime) {
        let class = req.file_class as u32;
        let s = match req.meta {
            meta::JOURNAL => self.ids[0],
            meta::INODE => self.ids[1],
            meta::DIRECTORY => self.ids[2],
            meta::BITMAP | meta::OTHER => self.ids[3],
            _ if self.fname_classes.binary_search(&class).is_ok() => self.ids[4],
            _ if self.extn_classes.binary_search(&class).is_ok() => self.ids[5],
            _ => 0,
        };
        self.req_stream = StreamId(s);
    }
    fn on_write(&mut self, _w: &WriteInfo, _now: LogicalTime) -> StreamId {
        self.req_stream
    }
    fn state_bytes(&self) -> usize {
        (self.fname_classes.len() + self.extn_classes.len()) * 4 + self.ids.len()
    }
}
