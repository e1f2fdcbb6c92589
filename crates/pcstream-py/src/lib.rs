//! `pcstream._engine`: Python bindings. Only converts arguments, releases the GIL around engine
//! work, relays progress callbacks and Ctrl-C (and SIGTERM: [`signals`]), and maps errors to the
//! exception family `PcstreamError` (`InputError`, `ConfigError`, `UsageError`). Results cross as
//! JSON text.

mod signals;

use std::collections::BTreeMap;
use std::path::Path;

use pcstream_core::placement::registry;
use pcstream_core::request::Request;
use pcstream_core::{config, SimError, SimOptions, Simulator, SsdConfig};
use pcstream_trace::blocktrace::format::COLUMNS;
use pcstream_trace::blocktrace::{BlockTraceWriter, TraceMeta, DEFAULT_ROW_GROUP_ROWS};
use pcstream_trace::input_file::{
    read_capped, MIX_SPEC_MAX_BYTES, PC_TABLE_MAX_BYTES, SSD_CONFIG_MAX_BYTES,
};
use pcstream_trace::map::aging::{self, AgingSpec};
use pcstream_trace::pc_labels::TopLabels;
use pcstream_trace::replay::run_with_table_file;
use pcstream_trace::{
    cancel, generate_to_file, summarize, summarize_labelled, GenParams, RunError, TraceError,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    pcstream._engine,
    PcstreamError,
    PyException,
    "Base of every pcstream error."
);
create_exception!(
    pcstream._engine,
    InputError,
    PcstreamError,
    "A missing, unreadable or malformed input file."
);
create_exception!(
    pcstream._engine,
    ConfigError,
    PcstreamError,
    "A bad SSD configuration or preset."
);
create_exception!(
    pcstream._engine,
    UsageError,
    PcstreamError,
    "An unknown name or a bad parameter."
);

fn sim_err(e: SimError) -> PyErr {
    match e {
        SimError::Config(c) => ConfigError::new_err(c.to_string()),
        SimError::UnknownPolicy(..) | SimError::BadParam(_) => UsageError::new_err(e.to_string()),
        SimError::BadRequest { .. } | SimError::State(_) => InputError::new_err(e.to_string()),
    }
}

fn trace_err(e: TraceError) -> PyErr {
    match e {
        TraceError::Gen(s) => UsageError::new_err(s),
        TraceError::Memory(s) => ConfigError::new_err(s),
        TraceError::Interrupted => PcstreamError::new_err(TraceError::Interrupted.to_string()),
        other => InputError::new_err(other.to_string()),
    }
}

fn run_err(e: RunError) -> PyErr {
    match e {
        RunError::Trace(t) => trace_err(t),
        RunError::Sim(s) => sim_err(s),
        RunError::NoTable(_) => UsageError::new_err(e.to_string()),
        RunError::Interrupted => PcstreamError::new_err("interrupted"),
    }
}

/// Before engine work that runs long or writes an output: forget an earlier stop request, make
/// SIGINT and SIGTERM set it ([`signals::arm`]), and raise a signal that is already pending.
fn start_work(py: Python<'_>) -> PyResult<()> {
    signals::arm();
    py.check_signals()
}

/// The error of engine work that ended with `err`: when a signal asked it to stop, the exception
/// the signal's Python handler raises (`KeyboardInterrupt`, the CLI's `Terminated`), run now.
fn stopped_or(py: Python<'_>, err: PyErr) -> PyErr {
    if !cancel::requested() {
        return err;
    }
    py.check_signals().err().unwrap_or(err)
}

fn load_ssd(ssd: &str) -> PyResult<SsdConfig> {
    if config::preset_toml(ssd).is_some() {
        return SsdConfig::preset(ssd).map_err(|e| ConfigError::new_err(e.to_string()));
    }
    let p = Path::new(ssd);
    if !p.exists() {
        if ssd.ends_with(".toml") || ssd.contains('/') {
            return Err(ConfigError::new_err(format!(
                "{ssd}: no such SSD config file; check the path"
            )));
        }
        return Err(ConfigError::new_err(
            SsdConfig::preset(ssd).unwrap_err().to_string(),
        ));
    }
    // A config that is no regular file, too big or not text is a bad config like a malformed one.
    let text = read_capped(p, "SSD config file", SSD_CONFIG_MAX_BYTES)
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    SsdConfig::from_toml(ssd, &text).map_err(|e| ConfigError::new_err(e.to_string()))
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pyfunction]
fn policies(py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
    let mut out = Vec::new();
    for p in registry::POLICIES {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("sees", p.sees.names())?;
        d.set_item("summary", p.summary)?;
        out.push(d.into_any().unbind());
    }
    Ok(out)
}

#[pyfunction]
fn presets() -> Vec<&'static str> {
    config::PRESETS.to_vec()
}

#[pyfunction]
fn preset_toml(name: &str) -> PyResult<&'static str> {
    config::preset_toml(name).ok_or_else(|| {
        ConfigError::new_err(SsdConfig::preset(name).map(|_| ()).unwrap_err().to_string())
    })
}

#[pyfunction]
fn ssd_summary(ssd: &str) -> PyResult<String> {
    let c = load_ssd(ssd)?;
    Ok(serde_json::json!({
        "name": c.name, "channels": c.geometry.channels, "ways": c.geometry.ways, "dies": c.dies(),
        "blocks_per_die": c.geometry.blocks_per_die, "pages_per_block": c.geometry.pages_per_block,
        "page_bytes": c.geometry.page_bytes, "unit_pages": c.unit_pages(), "units": c.units(),
        "physical_pages": c.physical_pages(), "logical_pages": c.logical_pages(), "op": c.ftl.op,
        "host_streams": c.ftl.host_streams, "gc_unit": format!("{:?}", c.ftl.gc_unit).to_lowercase(),
        "gc_victim": format!("{:?}", c.ftl.gc_victim).to_lowercase(),
        "gc_low_units": c.gc_low_units(), "gc_high_units": c.gc_high_units(),
        "read_us": c.timing.read_us, "program_us": c.timing.program_us, "erase_us": c.timing.erase_us,
        "queue_depth": c.timing.queue_depth,
    })
    .to_string())
}

/// How a trace is simulated: a `pcstream.options.SimOptions`, read from its attributes (the
/// fields are declared there, once).
#[derive(FromPyObject)]
struct PySimOptions {
    ssd: String,
    prefill: f64,
    warmup: u64,
    seed: u64,
    timing: bool,
    table: Option<String>,
    /// `(key, value)` pairs; a later pair wins over an earlier one with the same key.
    params: Vec<(String, String)>,
    cdf_points: usize,
}

impl PySimOptions {
    fn sim_options(&self, policy: &str, trace: &str) -> SimOptions {
        SimOptions {
            policy: policy.to_string(),
            prefill: self.prefill,
            warmup: self.warmup,
            seed: self.seed,
            timing: self.timing,
            cdf_points: self.cdf_points,
            params: self.params.iter().cloned().collect(),
            trace_name: trace.to_string(),
        }
    }
}

#[pyfunction]
#[pyo3(signature = (trace, policy, options, progress=None))]
fn simulate(
    py: Python<'_>,
    trace: &str,
    policy: &str,
    options: PySimOptions,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let cfg = load_ssd(&options.ssd)?;
    let opts = options.sim_options(policy, trace);
    let table = options.table.as_deref().map(Path::new);
    let mut prog = PyProgress::new(progress);
    start_work(py)?;
    let r = py.allow_threads(|| {
        run_with_table_file(Path::new(trace), &cfg, opts, table, &mut |d, t| {
            prog.call(d, t)
        })
    });
    let r = r.map_err(|e| stopped_or(py, prog.run_err(e)))?;
    Ok(serde_json::to_string(&r).expect("result serialises"))
}

/// A persistent PC table (the JSON `simulate --table` writes) loaded into `policy` on `ssd` as a
/// simulation loads it (re-clustered at once for the SSD's stream count), then saved again: the
/// streams and centroids that simulation would start with.
#[pyfunction]
#[pyo3(signature = (table, ssd="paper", policy="pcstream", params=None))]
fn table_streams(
    table: &str,
    ssd: &str,
    policy: &str,
    params: Option<BTreeMap<String, String>>,
) -> PyResult<String> {
    let cfg = load_ssd(ssd)?;
    let opts = SimOptions {
        policy: policy.to_string(),
        prefill: 0.0,
        warmup: 0,
        seed: 0,
        timing: false,
        cdf_points: 0,
        params: params.unwrap_or_default(),
        trace_name: String::new(),
    };
    let mut sim = Simulator::new(&cfg, opts).map_err(sim_err)?;
    sim.policy_mut()
        .load_state(table)
        .map_err(|e| InputError::new_err(e.to_string()))?;
    sim.policy_mut()
        .save_state()
        .ok_or_else(|| UsageError::new_err(format!("policy {policy} keeps no persistent table")))
}

#[pyfunction]
fn info(py: Python<'_>, trace: &str) -> PyResult<String> {
    py.allow_threads(|| summarize(Path::new(trace)))
        .map(|v| v.to_string())
        .map_err(trace_err)
}

/// `info`'s summary, and the labels of its top PCs (signature, label; None when the trace names
/// no PC): from the PC table read once.
#[pyfunction]
fn info_labelled(py: Python<'_>, trace: &str) -> PyResult<(String, TopLabels)> {
    py.allow_threads(|| summarize_labelled(Path::new(trace), true))
        .map(|(summary, labels)| (summary.to_string(), labels))
        .map_err(trace_err)
}

/// The footer's key-value pairs of the Parquet file `trace`, in file order.
#[pyfunction]
fn footer_values(py: Python<'_>, trace: &str) -> PyResult<Vec<(String, String)>> {
    py.allow_threads(|| pcstream_trace::pc_files::footer_values(Path::new(trace)))
        .map_err(trace_err)
}

/// (PC, file id, amount written) of every PC and file of `trace` with writes (pages of a block
/// trace, bytes of a file-level trace).
#[pyfunction]
fn pc_file_amounts(py: Python<'_>, trace: &str) -> PyResult<Vec<(u64, u32, u64)>> {
    py.allow_threads(|| pcstream_trace::pc_files::pc_file_amounts(Path::new(trace)))
        .map_err(trace_err)
}

/// (the PCs in the table, the label of each PC of `wanted`): the frames that tell each from every
/// PC of the `pcstream.pcs` table `pcs_json`; a table of the wrong shape is a `ValueError`.
#[pyfunction]
fn pc_labels(
    py: Python<'_>,
    pcs_json: &str,
    wanted: Vec<String>,
) -> PyResult<(usize, Vec<String>)> {
    py.allow_threads(|| pcstream_trace::pc_labels::label_table(pcs_json, &wanted))
        .map_err(pyo3::exceptions::PyValueError::new_err)
}

/// A demangled C++ name without its parameter list and qualifiers (`ns::f(int) const` → `ns::f`).
#[pyfunction]
fn short_symbol(symbol: &str) -> &str {
    pcstream_trace::pc_labels::short_symbol(symbol)
}

fn gen_params(params: &BTreeMap<String, String>) -> PyResult<GenParams> {
    let mut p = GenParams::default();
    for (k, v) in params {
        let bad = || UsageError::new_err(format!("gen parameter {k}={v}: cannot parse the value"));
        macro_rules! num {
            ($f:expr) => {
                $f = v.parse().map_err(|_| bad())?
            };
        }
        match k.as_str() {
            "capacity_pages" => num!(p.capacity_pages),
            "footprint" => num!(p.footprint),
            "writes" => num!(p.writes),
            "req_pages" => num!(p.req_pages),
            "seed" => num!(p.seed),
            "read_ratio" => num!(p.read_ratio),
            "theta" => num!(p.theta),
            "alpha" => num!(p.alpha),
            "sigma" => num!(p.sigma),
            "hot_fraction" => num!(p.hot_fraction),
            "hot_ratio" => num!(p.hot_ratio),
            "mix" => p.mix = v.clone(),
            "levels" => num!(p.levels),
            "ratio" => num!(p.ratio),
            "skew" => num!(p.skew),
            "build_share" => num!(p.build_share),
            "sst_pages" => num!(p.sst_pages),
            "sst_alloc" => p.sst_alloc = v.parse().map_err(UsageError::new_err)?,
            _ => return Err(UsageError::new_err(format!("unknown gen parameter '{k}'"))),
        }
    }
    Ok(p)
}

#[pyfunction]
fn gen(
    py: Python<'_>,
    kind: &str,
    out: &str,
    params: BTreeMap<String, String>,
) -> PyResult<String> {
    let p = gen_params(&params)?;
    let max = pcstream_trace::blocktrace::format::MAX_PAGES;
    if p.capacity_pages > max {
        return Err(UsageError::new_err(format!(
            "capacity_pages {} is beyond {max} pages (2^40, 4 PiB), the largest trace pcstream takes",
            p.capacity_pages
        )));
    }
    if kind == "lsm" {
        // The store keeps every key of its SSTs (4 B per page) and a free-slot set.
        pcstream_trace::meminfo::check(
            p.capacity_pages.saturating_mul(8),
            &format!("gen lsm over {} pages", p.capacity_pages),
            "the store's keys and SST slots, up to 8 bytes per page",
            "lower --capacity-pages",
        )
        .map_err(ConfigError::new_err)?;
    }
    if kind == "mix" {
        // The mix generator keeps a pool of file slots per region: at most one per page.
        pcstream_trace::meminfo::check(
            p.capacity_pages.saturating_mul(16),
            &format!("gen mix over {} pages", p.capacity_pages),
            "the writers' pools of file slots, up to 16 bytes per page",
            "lower --capacity-pages",
        )
        .map_err(ConfigError::new_err)?;
    }
    start_work(py)?;
    py.allow_threads(|| generate_to_file(kind, &p, Path::new(out)))
        .map(|v| v.to_string())
        .map_err(|e| stopped_or(py, trace_err(e)))
}

#[pyfunction(name = "bench")]
#[pyo3(signature = (ssd="paper", policy="baseline", pages=0, timing=false, seed=1))]
fn bench_engine(
    py: Python<'_>,
    ssd: &str,
    policy: &str,
    pages: u64,
    timing: bool,
    seed: u64,
) -> PyResult<String> {
    let cfg = load_ssd(ssd)?;
    let r = py
        .allow_threads(|| pcstream_trace::bench::bench(&cfg, policy, pages, timing, seed))
        .map_err(run_err)?;
    Ok(serde_json::to_string(&r).expect("a bench result serialises"))
}

/// How shim logs are converted: the fields of a `pcstream.options.RecordOptions` the conversion
/// reads (the class declares them, once). `coalesce`: fold runs of small contiguous writes.
#[derive(FromPyObject)]
struct PyRecordOptions {
    coalesce: bool,
}

/// Convert the shim logs in `logdir` into the file-level trace `out` as `options` say (see
/// [`PyRecordOptions`]), with `pcstream.capture` = `capture` when given; returns a JSON summary
/// (records, writes, processes, signatures, paths, warnings, lost_processes, torn_bytes,
/// coalesced_writes).
#[pyfunction]
#[pyo3(signature = (logdir, out, source, options, capture=None))]
fn record_convert(
    py: Python<'_>,
    logdir: &str,
    out: &str,
    source: &str,
    options: PyRecordOptions,
    capture: Option<&str>,
) -> PyResult<String> {
    let coalesce = options.coalesce;
    start_work(py)?;
    let r = py.allow_threads(|| {
        let logs = pcstream_trace::record::shimlog::read_dir(Path::new(logdir))
            .map_err(|e| InputError::new_err(e.to_string()))?;
        let s = pcstream_trace::record::write_file_trace_as(
            &logs,
            Path::new(out),
            source,
            coalesce,
            capture,
        )
        .map_err(trace_err)?;
        Ok(serde_json::to_string(&s).expect("a summary serialises"))
    });
    r.map_err(|e| stopped_or(py, e))
}

/// Calls a Python progress callback `(done, total)` from engine code running without the GIL;
/// checks for Ctrl-C at each call. Returns `false` (stop) on a signal or a callback error, which
/// is kept for the caller to raise.
struct PyProgress {
    callback: Option<Py<PyAny>>,
    error: Option<PyErr>,
}

impl PyProgress {
    fn new(callback: Option<Py<PyAny>>) -> PyProgress {
        PyProgress {
            callback,
            error: None,
        }
    }

    fn call(&mut self, done: u64, total: u64) -> bool {
        Python::with_gil(|py| {
            if let Err(e) = py.check_signals() {
                self.error = Some(e);
                return false;
            }
            if let Some(p) = &self.callback {
                if let Err(e) = p.call1(py, (done, total)) {
                    self.error = Some(e);
                    return false;
                }
            }
            true
        })
    }

    /// The error to raise: the callback's or the signal's when it stopped the engine, else `e`.
    fn err(self, e: TraceError) -> PyErr {
        self.error.unwrap_or_else(|| trace_err(e))
    }

    /// As [`PyProgress::err`] for a simulation's error.
    fn run_err(self, e: RunError) -> PyErr {
        match (self.error, e) {
            (Some(err), RunError::Interrupted) => err,
            (_, e) => run_err(e),
        }
    }
}

/// Import a block trace of `format` from the field into the block-trace Parquet `out`; returns
/// a JSON report (lines, rows, writes, reads, trims, flushes, write_pages, read_pages,
/// trim_pages, filtered_out, capacity_pages, skipped, skipped_count). A malformed line (beyond
/// `skip_bad`) is an `InputError` naming `FILE:LINE`; an unknown format a `UsageError`.
/// `meta_map`: `(first page, pages, meta class)` ranges that classify pages by address.
/// `progress(bytes_read, file_bytes)`. `label`: the input's name in the trace's source and in
/// errors, when it is not `input` (a volume spilled from a larger file).
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (format, input, out, capacity_pages=None, device=None, skip_bad=0, meta_map=None, progress=None, label=None))]
fn import_trace(
    py: Python<'_>,
    format: &str,
    input: &str,
    out: &str,
    capacity_pages: Option<u64>,
    device: Option<String>,
    skip_bad: u64,
    meta_map: Option<Vec<(u64, u64, u8)>>,
    progress: Option<Py<PyAny>>,
    label: Option<String>,
) -> PyResult<String> {
    use pcstream_trace::import::{import, ImportOptions};
    let opts = ImportOptions {
        device,
        capacity_pages,
        skip_bad,
        meta_map: meta_map.unwrap_or_default(),
        label,
    };
    let mut prog = PyProgress::new(progress);
    start_work(py)?;
    let r = py.allow_threads(|| {
        import(
            format,
            Path::new(input),
            Path::new(out),
            &opts,
            &mut |d, t| prog.call(d, t),
        )
    });
    match r {
        Ok(rep) => Ok(serde_json::to_string(&rep).expect("a report serialises")),
        Err(e) => Err(stopped_or(py, prog.err(e))),
    }
}

/// How a file-level trace is mapped: a `pcstream.options.MapOptions`, read from its attributes
/// (the fields are declared there, once). `capacity` in 4 KiB pages; `mount_opts` as `mount -o`
/// (see docs/FSMODEL.md); `device`: model only events about files on this `st_dev`; `age`: age
/// the file system to this share of its blocks first (`age_seed`, `age_churn` rounds).
#[derive(FromPyObject)]
struct PyMapOptions {
    capacity: u64,
    mount_opts: String,
    device: Option<u64>,
    age: Option<f64>,
    age_seed: u64,
    age_churn: u32,
}

/// Map the file-level trace `input` through the ext4 model into the block trace `out` with
/// `options` (see [`PyMapOptions`]); returns the JSON `MapSummary`.
/// `progress(events_done, events_total)`.
#[pyfunction]
#[pyo3(signature = (input, out, options, progress=None))]
fn map_trace(
    py: Python<'_>,
    input: &str,
    out: &str,
    options: PyMapOptions,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let o = options;
    let mut opts = map_options(o.capacity, &o.mount_opts, o.age, o.age_seed, o.age_churn)?;
    opts.only_dev = o.device;
    let mut prog = PyProgress::new(progress);
    start_work(py)?;
    let r = py.allow_threads(|| {
        pcstream_trace::map_file_trace(Path::new(input), Path::new(out), &opts, &mut |d, t| {
            prog.call(d, t)
        })
    });
    match r {
        Ok(s) => Ok(serde_json::to_string(&s).expect("a summary serialises")),
        Err(e) => Err(stopped_or(py, prog.err(e))),
    }
}

fn map_options(
    capacity_pages: u64,
    mount_opts: &str,
    age: Option<f64>,
    seed: u64,
    churn: u32,
) -> PyResult<pcstream_trace::MapOptions> {
    let mut opts = pcstream_trace::MapOptions::from_mount_opts(capacity_pages, mount_opts)
        .map_err(trace_err)?;
    opts.age = age.map(|share| AgingSpec { share, seed, churn });
    Ok(opts)
}

/// The aging plan `map --age` applies (the same operations age a real ext4): a JSON list of
/// `{"op": "create", "path", "bytes"}`, `{"op": "delete", "path"}` and `{"op": "sync"}`.
#[pyfunction]
#[pyo3(signature = (capacity_pages, share, seed=0, churn=0, mount_opts=""))]
fn aging_plan(
    py: Python<'_>,
    capacity_pages: u64,
    share: f64,
    seed: u64,
    churn: u32,
    mount_opts: &str,
) -> PyResult<String> {
    let opts = map_options(capacity_pages, mount_opts, None, seed, churn)?;
    start_work(py)?;
    let ops = py
        .allow_threads(|| aging::plan(&opts, AgingSpec { share, seed, churn }))
        .map_err(|e| stopped_or(py, UsageError::new_err(e.what)))?;
    Ok(serde_json::to_string(&ops).expect("a plan serialises"))
}

/// The outputs the last engine call that writes renamed into place, complete (those a signal
/// came after are kept: `pcstream_trace::cancel`).
#[pyfunction]
fn kept_outputs() -> Vec<String> {
    cancel::kept()
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// Whether a signal (SIGINT, SIGTERM) asked the last engine call to stop.
#[pyfunction]
fn stop_requested() -> bool {
    cancel::requested()
}

/// The footer keys of both trace formats, by their Rust constant's name (`KEY_PCS` →
/// `pcstream.pcs`): the one definition the Python package reads them from.
#[pyfunction]
fn footer_keys() -> BTreeMap<&'static str, &'static str> {
    pcstream_trace::parquet::keys::FOOTER_KEYS
        .into_iter()
        .collect()
}

/// The size limits of the small input files, in bytes, by what they are (`ssd_config`,
/// `mix_spec`, `pc_table`): the one definition the Python package reads them from.
#[pyfunction]
fn input_limits() -> BTreeMap<&'static str, u64> {
    BTreeMap::from([
        ("ssd_config", SSD_CONFIG_MAX_BYTES),
        ("mix_spec", MIX_SPEC_MAX_BYTES),
        ("pc_table", PC_TABLE_MAX_BYTES),
    ])
}

/// Replace footer key `key` of the trace `path` (either format) with `value`, rows and other
/// pairs kept, the file replaced atomically.
#[pyfunction]
fn set_footer_value(py: Python<'_>, path: &str, key: &str, value: &str) -> PyResult<()> {
    start_work(py)?;
    py.allow_threads(|| {
        pcstream_trace::parquet::rewrite::set_footer_value(Path::new(path), key, value)
    })
    .map_err(|e| stopped_or(py, trace_err(e)))
}

/// The rows of a block trace given as whole columns: `columns` maps every column name of the
/// format to the little-endian bytes of its values at the column's width (numpy's
/// `astype(dtype).tobytes()`), all of one length in rows.
fn requests_from_columns(columns: &Bound<'_, PyDict>) -> PyResult<Vec<Request>> {
    let mut rows: Option<usize> = None;
    let mut out = Vec::new();
    for (i, (name, bits)) in COLUMNS.iter().enumerate() {
        let item = columns
            .get_item(name)?
            .ok_or_else(|| UsageError::new_err(format!("block-trace column {name} is missing")))?;
        let data = item.downcast::<PyBytes>()?.as_bytes();
        let width = usize::from(*bits / 8);
        let n = data.len() / width;
        if data.len() % width != 0 || rows.is_some_and(|r| r != n) {
            return Err(UsageError::new_err(format!(
                "block-trace column {name}: {} bytes are not {} rows of {width} bytes",
                data.len(),
                rows.unwrap_or(n)
            )));
        }
        if rows.is_none() {
            rows = Some(n);
            out = vec![Request::default(); n];
        }
        for (r, v) in out.iter_mut().zip(data.chunks_exact(width)) {
            let mut le = [0u8; 8];
            le[..width].copy_from_slice(v);
            let v = u64::from_le_bytes(le);
            // The width was read from the column's type: the casts below cannot truncate.
            match i {
                0 => r.ts_ns = v,
                1 => r.op = v as u8,
                2 => r.lpn = v,
                3 => r.pages = v as u32,
                4 => r.pc = v,
                5 => r.file = v as u32,
                6 => r.file_class = v as u16,
                7 => r.meta = v as u8,
                8 => r.pid = v as u32,
                _ => r.hint = v as u8,
            }
        }
    }
    Ok(out)
}

/// Write the block trace `out` from whole columns (see `requests_from_columns`) with the footer
/// pairs `meta` (`pcstream.*` keys; the format and page size are the writer's), through the
/// engine's writer: rows checked, written atomically. `keep_unused_pcs`: keep the PC table
/// whole rather than only the PCs of the rows. Returns the rows written.
#[pyfunction]
#[pyo3(signature = (out, columns, meta, keep_unused_pcs = false))]
fn write_block_trace(
    py: Python<'_>,
    out: &str,
    columns: &Bound<'_, PyDict>,
    meta: BTreeMap<String, String>,
    keep_unused_pcs: bool,
) -> PyResult<u64> {
    let rows = requests_from_columns(columns)?;
    let pairs: Vec<(String, Option<String>)> =
        meta.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let meta = TraceMeta::from_pairs(out, &pairs).map_err(trace_err)?;
    start_work(py)?;
    py.allow_threads(|| {
        let mut w = BlockTraceWriter::create(Path::new(out), &meta, DEFAULT_ROW_GROUP_ROWS)?;
        if keep_unused_pcs {
            w.keep_unused_pcs();
        }
        for r in &rows {
            w.push(r)?;
        }
        w.finish()
    })
    .map_err(|e| stopped_or(py, trace_err(e)))
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PcstreamError", py.get_type::<PcstreamError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(ssd_summary, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(table_streams, m)?)?;
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(info_labelled, m)?)?;
    m.add_function(wrap_pyfunction!(footer_values, m)?)?;
    m.add_function(wrap_pyfunction!(pc_file_amounts, m)?)?;
    m.add_function(wrap_pyfunction!(pc_labels, m)?)?;
    m.add_function(wrap_pyfunction!(short_symbol, m)?)?;
    m.add_function(wrap_pyfunction!(gen, m)?)?;
    m.add_function(wrap_pyfunction!(bench_engine, m)?)?;
    m.add_function(wrap_pyfunction!(record_convert, m)?)?;
    m.add_function(wrap_pyfunction!(import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(map_trace, m)?)?;
    m.add_function(wrap_pyfunction!(aging_plan, m)?)?;
    m.add_function(wrap_pyfunction!(kept_outputs, m)?)?;
    m.add_function(wrap_pyfunction!(stop_requested, m)?)?;
    m.add_function(wrap_pyfunction!(footer_keys, m)?)?;
    m.add_function(wrap_pyfunction!(input_limits, m)?)?;
    m.add_function(wrap_pyfunction!(set_footer_value, m)?)?;
    m.add_function(wrap_pyfunction!(write_block_trace, m)?)?;
    Ok(())
}
