//! Measured figures of a run: WAF, erases, per-stream pages and lifetimes, latency histogram,
//! IOPS. Everything counts only after the warm-up (the first `--warmup` host pages).

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::ftl::FtlCounters;

pub struct Metrics {
    pub measuring: bool,
    start: FtlCounters,
    pub host_pages: u64,
    pub trim_pages: u64,
    pub read_pages: u64,
    pub requests: u64,
    pub stream_pages: Vec<u64>,
    lifetimes: Vec<Histogram<u64>>,
    latency_ns: Histogram<u64>,
    pub first_issue_ns: Option<u64>,
}

/// Lifetime quartiles of one host stream, in host pages.
#[derive(Clone, Debug, Serialize)]
pub struct StreamStats {
    pub stream: u32,
    pub pages: u64,
    pub share: f64,
    pub lifetime_samples: u64,
    pub lifetime_p25: Option<u64>,
    pub p50: Option<u64>,
    pub p75: Option<u64>,
}

/// The result of one simulation (the `--json` object; field names are a contract).
#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    pub trace: String,
    pub policy: String,
    pub ssd: String,
    pub seed: u64,
    pub prefill: f64,
    /// Pages of the trace's aged state written before it (0: none), in no figure.
    pub aged_pages: u64,
    pub warmup: u64,
    pub params: std::collections::BTreeMap<String, String>,
    pub gc_mode: String,
    pub waf: f64,
    pub host_pages: u64,
    pub gc_pages: u64,
    pub erases: u64,
    pub trims_pages: u64,
    pub reads_pages: u64,
    pub requests: u64,
    pub timing: bool,
    pub iops: Option<f64>,
    pub lat_mean_us: Option<f64>,
    pub lat_p50_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
    pub lat_p999_us: Option<f64>,
    pub sim_time_s: Option<f64>,
    pub stream0_share: f64,
    pub per_stream: Vec<StreamStats>,
    pub open_write_points: usize,
    pub write_points: usize,
    pub policy_state_bytes: usize,
    pub engine_state_bytes: usize,
    pub bytes_per_page: f64,
    pub logical_pages: u64,
    pub physical_pages: u64,
    pub latency_cdf: Option<Vec<(f64, f64)>>,
    pub saved_table: Option<String>,
    pub wall_s: f64,
    pub host_pages_per_s: f64,
    pub page_ops_per_s: f64,
}

fn hist() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid histogram precision")
}

impl Metrics {
    pub fn new(host_streams: u32) -> Metrics {
        Metrics {
            measuring: false,
            start: FtlCounters::default(),
            host_pages: 0,
            trim_pages: 0,
            read_pages: 0,
            requests: 0,
            stream_pages: vec![0; host_streams as usize],
            lifetimes: (0..host_streams).map(|_| hist()).collect(),
            latency_ns: hist(),
            first_issue_ns: None,
        }
    }

    pub fn start(&mut self, c: FtlCounters) {
        self.measuring = true;
        self.start = c;
    }

    #[inline]
    pub fn lifetime(&mut self, stream: u8, pages: u64) {
        if let Some(h) = self.lifetimes.get_mut(stream as usize) {
            let _ = h.record(pages); // auto-resizing: grows to the largest lifetime seen
        }
    }

    #[inline]
    pub fn latency(&mut self, ns: u64) {
        let _ = self.latency_ns.record(ns);
    }

    /// (gc_pages, erases) since the measurement started.
    pub fn physical(&self, now: FtlCounters) -> (u64, u64) {
        if !self.measuring {
            return (0, 0);
        }
        (
            now.gc_pages - self.start.gc_pages,
            now.erases - self.start.erases,
        )
    }

    pub fn per_stream(&self) -> Vec<StreamStats> {
        let total = self.host_pages.max(1) as f64;
        (0..self.stream_pages.len())
            .filter(|&s| self.stream_pages[s] > 0 || !self.lifetimes[s].is_empty())
            .map(|s| {
                let h = &self.lifetimes[s];
                let q = |x: f64| (!h.is_empty()).then(|| h.value_at_quantile(x));
                StreamStats {
                    stream: s as u32,
                    pages: self.stream_pages[s],
                    share: self.stream_pages[s] as f64 / total,
                    lifetime_samples: h.len(),
                    lifetime_p25: q(0.25),
                    p50: q(0.5),
                    p75: q(0.75),
                }
            })
            .collect()
    }

    /// Latency percentile in µs (None without samples).
    pub fn latency_us(&self, q: f64) -> Option<f64> {
        (!self.latency_ns.is_empty()).then(|| self.latency_ns.value_at_quantile(q) as f64 / 1000.0)
    }

    pub fn latency_mean_us(&self) -> Option<f64> {
        (!self.latency_ns.is_empty()).then(|| self.latency_ns.mean() / 1000.0)
    }

    /// `points` evenly spaced quantiles of the latency distribution as (µs, fraction ≤).
    pub fn latency_cdf(&self, points: usize) -> Vec<(f64, f64)> {
        if self.latency_ns.is_empty() || points == 0 {
            return Vec::new();
        }
        (1..=points)
            .map(|i| {
                let q = i as f64 / points as f64;
                (self.latency_ns.value_at_quantile(q) as f64 / 1000.0, q)
            })
            .collect()
    }
}
