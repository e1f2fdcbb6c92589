//! The simulator hands a policy only the attributes its `sees()` declares.

use std::sync::{Arc, Mutex};

use pcstream_core::placement::{Attrs, Placement, WriteInfo};
use pcstream_core::units::{LogicalTime, StreamId};
use pcstream_core::{Request, SimOptions, Simulator, SsdConfig};

struct Recorder {
    sees: Attrs,
    seen: Arc<Mutex<Vec<WriteInfo>>>,
}

impl Placement for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn sees(&self) -> Attrs {
        self.sees
    }
    fn on_write(&mut self, w: &WriteInfo, _now: LogicalTime) -> StreamId {
        self.seen.lock().unwrap().push(*w);
        StreamId(0)
    }
    fn state_bytes(&self) -> usize {
        0
    }
}

fn record(sees: Attrs) -> Vec<WriteInfo> {
    let cfg = SsdConfig::preset("small").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let policy = Box::new(Recorder {
        sees,
        seen: seen.clone(),
    });
    let mut sim = Simulator::with_policy(&cfg, SimOptions::default(), policy, None).unwrap();
    sim.start().unwrap();
    let r = Request {
        op: 0,
        lpn: 77,
        pages: 2,
        pc: 0xabc,
        file: 5,
        file_class: 3,
        meta: 1,
        pid: 42,
        hint: 2,
        ts_ns: 9,
    };
    sim.feed(&[r]).unwrap();
    let v = seen.lock().unwrap().clone();
    v
}

#[test]
fn a_policy_that_sees_nothing_gets_zeros() {
    let v = record(Attrs::NONE);
    assert_eq!(v.len(), 2);
    for w in &v {
        assert_eq!(
            (
                w.lpn.0,
                w.req.pc.0,
                w.req.file,
                w.req.file_class,
                w.req.meta,
                w.req.pid,
                w.req.hint
            ),
            (0, 0, 0, 0, 0, 0, 0)
        );
    }
}

#[test]
fn a_policy_sees_exactly_what_it_declares() {
    let v = record(Attrs::LPN.union(Attrs::PC).union(Attrs::HINT));
    assert_eq!(v.iter().map(|w| w.lpn.0).collect::<Vec<_>>(), vec![77, 78]);
    assert!(v.iter().all(|w| w.req.pc.0 == 0xabc && w.req.hint == 2));
    assert!(v
        .iter()
        .all(|w| w.req.file == 0 && w.req.pid == 0 && w.req.meta == 0 && w.req.file_class == 0));
}
