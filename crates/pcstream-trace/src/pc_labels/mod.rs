//! Labels that tell program contexts (PCs) apart, for the report's PC streams and `pcstream
//! info`, from a `pcstream.pcs` table (signature → frames, innermost first).
//!
//! A PC's call path mostly repeats what the other PCs of a program have: the same `main` and
//! event loop outside, the same write wrapper and static helpers inside. A label keeps what
//! differs:
//!
//! * the **distinguishing frames**: the innermost frame whose (module, symbol — or offset when
//!   the frame has no symbol) no other PC of the table has on its path (or at that depth); when
//!   no single frame does, the fewest frames that do together (innermost and named first), by
//!   offset inside the same function when the names alone cannot;
//! * the **context frame**: the outermost named frame that not every PC has on its path (`main`
//!   and the event loop say nothing), else the outermost named frame.
//!
//! Frames read outermost first ([`names`]). Two PCs never get the same label: when everything
//! above is equal (two signatures over the same frames), the signature is appended. Every PC of
//! the table is labelled, whichever are asked for, so a label does not depend on the PCs shown
//! beside it; the work is linear in the frames for PCs with a frame of their own (most), and
//! builds the sets of the PCs sharing each frame only for the others.

mod names;

use rustc_hash::FxHashMap;
use serde_json::Value;

pub use names::short_symbol;

/// One frame of a PC's call path, as `pcstream.pcs` holds it (`module_id` is not needed here).
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub module: &'a str,
    pub offset: u64,
    /// None for a frame without a symbol (absent, null or empty).
    pub symbol: Option<&'a str>,
}

impl<'a> Frame<'a> {
    /// The frame `{module: string, offset: integer ≥ 0, symbol?: string}`; None for another shape.
    fn of(frame: &'a Value) -> Option<Frame<'a>> {
        let symbol = match frame.get("symbol") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_str()?).filter(|s| !s.is_empty()),
        };
        Some(Frame {
            module: frame.get("module")?.as_str()?,
            offset: frame.get("offset")?.as_u64()?,
            symbol,
        })
    }
}

/// Signature → frames of the `pcstream.pcs` table `pcs`; None when it has another shape.
pub fn table_of(pcs: &Value) -> Option<Vec<(&str, Vec<Frame<'_>>)>> {
    pcs.as_object()?
        .iter()
        .map(|(sig, path)| Some((sig.as_str(), path_of(path)?)))
        .collect()
}

fn path_of(path: &Value) -> Option<Vec<Frame<'_>>> {
    path.as_array()?.iter().map(Frame::of).collect()
}

/// Where every process or thread starts: no context for a label.
const STARTUP_SYMBOLS: [&str; 11] = [
    "_start",
    "__libc_start_main",
    "__libc_start_main_impl",
    "__libc_start_call_main",
    "_dl_start_user",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__clone_internal",
];
/// Modules whose unnamed frames are process or thread start-up.
const RUNTIME_MODULES: [&str; 3] = ["libc.so", "ld-linux", "libpthread.so"];

/// The labels of the PCs `wanted` (signatures as in the table; one absent from the table or
/// without frames reads `PC <signature>`), each telling its PC from every PC of the table
/// `pcs_json` (`pcstream.pcs`). Returns (the PCs in the table, the labels in `wanted`'s order).
pub fn label_table(pcs_json: &str, wanted: &[String]) -> Result<(usize, Vec<String>), String> {
    let shape = "pcstream.pcs is not a table {\"signature\": [{module, offset, symbol?}]}";
    let pcs: Value = serde_json::from_str(pcs_json).map_err(|e| format!("{shape} ({e})"))?;
    let table = table_of(&pcs).ok_or_else(|| shape.to_string())?;
    Ok((table.len(), label_pcs(&table, wanted)))
}

/// (signature, label) of each top PC of a summary; None: no labels (the trace names no PC).
pub type TopLabels = Option<Vec<(String, String)>>;

/// The labels of the top PCs of an `info` summary (`pcs.top[].pc`; PC 0, writes without a
/// recorded context, left out), as (signature, label), from the trace's `pcstream.pcs` table
/// `pcs`; None when the table names no PC (or has another shape, which the readers refuse).
pub fn label_top(summary: &Value, pcs: &Value) -> TopLabels {
    let table = table_of(pcs).filter(|t| !t.is_empty())?;
    let top = summary.pointer("/pcs/top")?.as_array()?;
    let mut wanted: Vec<String> = vec![];
    for sig in top.iter().filter_map(|e| e.get("pc")?.as_str()) {
        if sig != "0" && !wanted.iter().any(|w| w == sig) {
            wanted.push(sig.to_string());
        }
    }
    let labels = label_pcs(&table, &wanted);
    Some(wanted.into_iter().zip(labels).collect())
}

/// [`label_table`] on a table already read.
pub fn label_pcs(table: &[(&str, Vec<Frame<'_>>)], wanted: &[String]) -> Vec<String> {
    let framed: Vec<(&str, &[Frame])> = table
        .iter()
        .filter(|(_, path)| !path.is_empty())
        .map(|(sig, path)| (*sig, path.as_slice()))
        .collect();
    let labeller = Labeller::new(&framed);
    let options: Vec<Vec<Choice>> = (0..framed.len()).map(|pc| labeller.options(pc)).collect();
    // (signature, text): every framed PC (its index in `framed`), then the PCs asked for without
    // frames.
    let mut texts: Vec<(&str, String)> = framed
        .iter()
        .zip(&options)
        .enumerate()
        .map(|(pc, (&(sig, _), found))| (sig, labeller.best(pc, found)))
        .collect();
    let mut at: FxHashMap<&str, usize> = framed.iter().enumerate().map(|(k, p)| (p.0, k)).collect();
    for sig in wanted {
        at.entry(sig.as_str()).or_insert_with(|| {
            texts.push((sig.as_str(), format!("PC {sig}")));
            texts.len() - 1
        });
    }
    // Equal texts: the first option (what the others lack), then the signature appended (twins
    // over the same frames, or modules with the same file name).
    for pass in 0..2 {
        let mut seen: FxHashMap<&str, usize> = FxHashMap::default();
        for (_, text) in &texts {
            *seen.entry(text.as_str()).or_default() += 1;
        }
        let twice: Vec<bool> = texts.iter().map(|(_, t)| seen[t.as_str()] > 1).collect();
        for (k, (sig, text)) in texts.iter_mut().enumerate() {
            if !twice[k] {
                continue;
            }
            if pass == 1 {
                *text = format!("{text} (PC {sig})");
            } else if k < framed.len() {
                *text = labeller.text(k, &options[k][0]);
            }
        }
    }
    wanted
        .iter()
        .map(|sig| texts[at[sig.as_str()]].1.clone())
        .collect()
}

/// A way to label a PC: its cost (PCs left sharing every chosen frame, frames, start-up frames,
/// unnamed frames: lower is better), the depths shown and those shown by their call site.
struct Choice {
    cost: [usize; 4],
    depths: Vec<usize>,
    exact: Vec<usize>,
}

/// What a frame is, read once: its name key (module and symbol, or module and offset), its call
/// site key (module and offset), whether it has a symbol, whether it is process start-up.
#[derive(Clone, Copy)]
struct Fact {
    name: u32,
    site: u32,
    named: bool,
    startup: bool,
}

impl Fact {
    /// (start-up, unnamed): the order in which frames are preferred in a label.
    fn rank(self) -> (usize, usize) {
        (usize::from(self.startup), usize::from(!self.named))
    }
}

/// For each key: the PCs with it anywhere on their path (`on_path`), or at each depth.
#[derive(Default)]
struct Index {
    on_path: FxHashMap<u32, Vec<u32>>,
    at_depth: FxHashMap<(usize, u32), Vec<u32>>,
}

impl Index {
    /// The index of the keys `key(fact)` of every PC's frames; each list ascending, a PC once.
    fn new(facts: &[Vec<Fact>], key: impl Fn(&Fact) -> u32) -> Index {
        let mut index = Index::default();
        for (pc, path) in facts.iter().enumerate() {
            let pc = pc as u32;
            for (depth, fact) in path.iter().enumerate() {
                let list = index.on_path.entry(key(fact)).or_default();
                if list.last() != Some(&pc) {
                    list.push(pc);
                }
                index
                    .at_depth
                    .entry((depth, key(fact)))
                    .or_default()
                    .push(pc);
            }
        }
        index
    }

    /// Per frame of `path`: the PCs sharing it (on their path, or at that depth).
    fn sharing<'a>(
        &'a self,
        path: &[Fact],
        on_path: bool,
        key: impl Fn(&Fact) -> u32,
    ) -> Vec<&'a [u32]> {
        let at = |(depth, fact): (usize, &Fact)| {
            let list = if on_path {
                &self.on_path[&key(fact)]
            } else {
                &self.at_depth[&(depth, key(fact))]
            };
            list.as_slice()
        };
        path.iter().enumerate().map(at).collect()
    }
}

/// The facts of every frame of every PC a label is chosen from (read once: linear in the frames)
/// and how many PCs share each frame; the sets of them are built only when first needed.
struct Labeller<'a> {
    paths: Vec<&'a [Frame<'a>]>,
    facts: Vec<Vec<Fact>>,
    count_on_path: Vec<usize>,
    count_at_depth: FxHashMap<(usize, u32), usize>,
    everywhere: Vec<bool>,
    named: std::cell::OnceCell<Index>,
    exact: std::cell::OnceCell<Index>,
}

impl<'a> Labeller<'a> {
    fn new(framed: &[(&str, &'a [Frame<'a>])]) -> Labeller<'a> {
        let mut keys: FxHashMap<(&str, Option<&str>, u64), u32> = FxHashMap::default();
        let mut sites: FxHashMap<(&str, u64), u32> = FxHashMap::default();
        let mut startup: Vec<bool> = vec![]; // per name key: a frame of process start-up
        let mut facts = Vec::with_capacity(framed.len());
        for &(_, path) in framed {
            let mut read = |f: &'a Frame| {
                // a named frame's key is its symbol, not its offset (0 for all of them)
                let key = (
                    f.module,
                    f.symbol,
                    if f.symbol.is_some() { 0 } else { f.offset },
                );
                let name = *keys.entry(key).or_insert_with(|| {
                    startup.push(match f.symbol {
                        Some(symbol) => STARTUP_SYMBOLS.contains(&short_symbol(symbol)),
                        None => RUNTIME_MODULES
                            .iter()
                            .any(|m| names::base_name(f.module).starts_with(m)),
                    });
                    startup.len() as u32 - 1
                });
                let s = sites.len() as u32;
                Fact {
                    name,
                    site: *sites.entry((f.module, f.offset)).or_insert(s),
                    named: f.symbol.is_some(),
                    startup: startup[name as usize],
                }
            };
            facts.push(path.iter().map(&mut read).collect::<Vec<Fact>>());
        }
        let mut count_on_path = vec![0usize; keys.len()];
        let mut count_at_depth: FxHashMap<(usize, u32), usize> = FxHashMap::default();
        let mut last_pc = vec![usize::MAX; keys.len()];
        for (pc, path) in facts.iter().enumerate() {
            for (depth, fact) in path.iter().enumerate() {
                *count_at_depth.entry((depth, fact.name)).or_default() += 1;
                // a frame twice on one path (recursion) counts once
                if last_pc[fact.name as usize] != pc {
                    last_pc[fact.name as usize] = pc;
                    count_on_path[fact.name as usize] += 1;
                }
            }
        }
        let everywhere = count_on_path.iter().map(|&n| n == framed.len()).collect();
        Labeller {
            paths: framed.iter().map(|p| p.1).collect(),
            facts,
            count_on_path,
            count_at_depth,
            everywhere,
            named: std::cell::OnceCell::new(),
            exact: std::cell::OnceCell::new(),
        }
    }

    /// The outermost frame to show for context: the outermost named frame not on every PC's
    /// path, else the outermost named one, else the outermost not of start-up, else the last.
    fn context(&self, pc: usize) -> usize {
        let facts = &self.facts[pc];
        let useful: Vec<usize> = (0..facts.len()).filter(|&d| !facts[d].startup).collect();
        let named: Vec<usize> = useful.iter().copied().filter(|&d| facts[d].named).collect();
        let context = named
            .iter()
            .copied()
            .filter(|&d| !self.everywhere[facts[d].name as usize]);
        context
            .max()
            .or_else(|| named.last().copied())
            .or_else(|| useful.last().copied())
            .unwrap_or(facts.len() - 1)
    }

    /// A label by frames absent from the others' paths and one by frames at depths where the
    /// others have other frames (often shorter, but only the first shows what the others lack).
    fn options(&self, pc: usize) -> Vec<Choice> {
        let facts = &self.facts[pc];
        let rank: Vec<(usize, usize)> = facts.iter().map(|f| f.rank()).collect();
        let outer = self.context(pc);
        let others = self.paths.len() - 1;
        let mut found = Vec::with_capacity(2);
        for on_path in [true, false] {
            let sizes = facts.iter().enumerate().map(|(depth, f)| {
                if on_path {
                    self.count_on_path[f.name as usize]
                } else {
                    self.count_at_depth[&(depth, f.name)]
                }
            });
            let unique = sizes
                .enumerate()
                .filter(|&(_, n)| n == 1 && others > 0)
                .min_by_key(|&(d, _)| (rank[d], d));
            if let Some((d, _)) = unique {
                // what choose() finds in one step: a frame no other PC has there
                let (startup, unnamed) = rank[d];
                found.push(Choice {
                    cost: [0, 1, startup, unnamed],
                    depths: vec![d, outer],
                    exact: vec![],
                });
                continue;
            }
            let named = self.sharing(pc, on_path, false);
            let (depths, mut left) = choose(&named, pc as u32, None, others, &rank);
            let mut exact = vec![];
            if left.as_ref().is_none_or(|l| !l.is_empty()) {
                // the same names: a chosen frame's call site may be what differs
                let sites = self.sharing(pc, on_path, true);
                (exact, left) = choose(&sites, pc as u32, left, others, &rank);
            }
            let mut chosen = depths;
            for d in &exact {
                if !chosen.contains(d) {
                    chosen.push(*d);
                }
            }
            if chosen.is_empty() {
                chosen.push(0);
            }
            let unresolved = left.map_or(others, |l| l.len());
            let startup = chosen.iter().map(|&d| rank[d].0).sum();
            let unnamed = chosen.iter().map(|&d| rank[d].1).sum();
            let cost = [unresolved, chosen.len(), startup, unnamed];
            chosen.push(outer);
            found.push(Choice {
                cost,
                depths: chosen,
                exact,
            });
        }
        found
    }

    /// Per frame of PC `pc`: the PCs with that frame (`exact`: at that call site) on their path
    /// (`on_path`) or at that depth.
    fn sharing(&self, pc: usize, on_path: bool, exact: bool) -> Vec<&[u32]> {
        let facts = &self.facts[pc];
        if exact {
            let index = self
                .exact
                .get_or_init(|| Index::new(&self.facts, |f| f.site));
            index.sharing(facts, on_path, |f| f.site)
        } else {
            let index = self
                .named
                .get_or_init(|| Index::new(&self.facts, |f| f.name));
            index.sharing(facts, on_path, |f| f.name)
        }
    }

    fn text(&self, pc: usize, choice: &Choice) -> String {
        names::render(self.paths[pc], &choice.depths, &choice.exact)
    }

    /// The text of the cheapest option; on equal costs, the first text in order.
    fn best(&self, pc: usize, options: &[Choice]) -> String {
        let low = options.iter().map(|o| o.cost).min().expect("two options");
        let tied: Vec<&Choice> = options.iter().filter(|o| o.cost == low).collect();
        if tied
            .iter()
            .all(|o| o.depths == tied[0].depths && o.exact == tied[0].exact)
        {
            return self.text(pc, tied[0]);
        }
        tied.iter()
            .map(|o| self.text(pc, o))
            .min()
            .expect("one tied")
    }
}

/// Depths of the frames of PC `pc` that tell it from the PCs `left` (None: all `others` PCs but
/// `pc`) — `sharing[d]`: the PCs, `pc` among them, sharing its frame at depth d — greedily: each
/// step takes the depth that leaves the fewest PCs sharing every chosen frame (on a tie the
/// better `rank`, then the innermost), until none is left or no depth helps. Returns (depths,
/// PCs left; None: all). While `left` is all, its size comes from the sharing sets' sizes and
/// it is never built: building it for every PC made labelling N PCs N² steps.
fn choose(
    sharing: &[&[u32]],
    pc: u32,
    mut left: Option<Vec<u32>>,
    others: usize,
    rank: &[(usize, usize)],
) -> (Vec<usize>, Option<Vec<u32>>) {
    let mut chosen: Vec<usize> = vec![];
    let mut size = left.as_ref().map_or(others, Vec::len);
    while size > 0 {
        let mut best: Option<(usize, (usize, usize), usize)> = None;
        for (depth, share) in sharing.iter().enumerate() {
            if chosen.contains(&depth) {
                continue;
            }
            let remain = match &left {
                None => share.len() - 1,
                Some(left) => common(left, share).count(),
            };
            let score = (remain, rank[depth], depth);
            if remain < size && best.is_none_or(|b| score < b) {
                best = Some(score);
            }
        }
        let Some((_, _, depth)) = best else {
            break;
        };
        chosen.push(depth);
        let next: Vec<u32> = match &left {
            None => sharing[depth]
                .iter()
                .copied()
                .filter(|&p| p != pc)
                .collect(),
            Some(left) => common(left, sharing[depth]).collect(),
        };
        size = next.len();
        left = Some(next);
    }
    (chosen, left)
}

/// The PCs in both ascending lists.
fn common<'a>(a: &'a [u32], b: &'a [u32]) -> impl Iterator<Item = u32> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                    return Some(a[i - 1]);
                }
            }
        }
        None
    })
}

#[cfg(test)]
mod tests;
