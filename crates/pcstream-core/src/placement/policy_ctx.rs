//! What a policy is built with (`PolicyCtx`), and how it reads its `--param key=value` pairs:
//! parsed, one of named options, or a number in a range, each with the error message a user
//! sees for a bad value.

use std::collections::BTreeMap;
use std::ops::RangeBounds;

use crate::error::SimError;

/// What a policy is built with.
#[derive(Clone, Debug)]
pub struct PolicyCtx {
    pub host_streams: u32,
    pub logical_pages: u64,
    pub unit_pages: u32,
    pub units: u32,
    /// Write points the device can hold open, GC copies of a victim going to one of them,
    /// without cutting its configured GC watermarks (`ftl::write_point_budget`).
    pub write_point_budget: u32,
    pub seed: u64,
    /// `--param key=value` pairs (policy-specific; unknown keys are an error).
    pub params: BTreeMap<String, String>,
}

impl PolicyCtx {
    /// Take a parameter, parsing it; the registry rejects parameters nobody took.
    pub fn param<T: std::str::FromStr>(&mut self, key: &str, default: T) -> Result<T, SimError> {
        match self.params.remove(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| SimError::BadParam(format!("{key}={v}: cannot parse the value"))),
        }
    }

    /// Take a parameter that names one of `options` (value, meaning), `default` when absent; any
    /// other name is an error listing the options in their order ("use a, b or c").
    pub fn choice<T: Copy>(
        &mut self,
        key: &str,
        default: &str,
        options: &[(&str, T)],
    ) -> Result<T, SimError> {
        assert!(
            options.iter().any(|&(name, _)| name == default),
            "{key}: the default {default} is not one of the options"
        );
        let v: String = self.param(key, default.to_string())?;
        match options.iter().find(|&&(name, _)| name == v) {
            Some(&(_, meaning)) => Ok(meaning),
            None => Err(SimError::BadParam(format!(
                "{key}={v}: use {}",
                either(options.iter().map(|&(name, _)| name))
            ))),
        }
    }

    /// Take a number parameter that must lie in `ok` (and, a float, be finite); out of it the
    /// error reads "KEY=VALUE: use EXPECTED".
    pub fn range<T, R>(
        &mut self,
        key: &str,
        default: T,
        ok: R,
        expected: &str,
    ) -> Result<T, SimError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display + Finite,
        R: RangeBounds<T>,
    {
        let v: T = self.param(key, default)?;
        if v.is_finite() && ok.contains(&v) {
            Ok(v)
        } else {
            Err(SimError::BadParam(format!("{key}={v}: use {expected}")))
        }
    }
}

/// A number that may be infinite or NaN (floats) or not (integers): `PolicyCtx::range` refuses
/// the former whatever the range says.
pub trait Finite {
    fn is_finite(&self) -> bool;
}

impl Finite for f64 {
    fn is_finite(&self) -> bool {
        f64::is_finite(*self)
    }
}

impl Finite for f32 {
    fn is_finite(&self) -> bool {
        f32::is_finite(*self)
    }
}

macro_rules! finite_integers {
    ($($t:ty),*) => {$(
        impl Finite for $t {
            fn is_finite(&self) -> bool {
                true
            }
        }
    )*};
}
finite_integers!(u8, u16, u32, u64, usize);

/// "a", "a or b", "a, b or c": the options an error message offers.
fn either<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(params: &[(&str, &str)]) -> PolicyCtx {
        PolicyCtx {
            host_streams: 4,
            logical_pages: 100,
            unit_pages: 8,
            units: 20,
            write_point_budget: 4,
            seed: 0,
            params: params
                .iter()
                .map(|&(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_choice_takes_its_default_or_a_named_option_and_lists_them_when_wrong() {
        let options = [("a", 1), ("b", 2), ("c", 3)];
        assert_eq!(ctx(&[]).choice("k", "b", &options).unwrap(), 2);
        assert_eq!(ctx(&[("k", "c")]).choice("k", "a", &options).unwrap(), 3);
        let e = ctx(&[("k", "d")]).choice("k", "a", &options).unwrap_err();
        assert_eq!(
            e.to_string(),
            SimError::BadParam("k=d: use a, b or c".into()).to_string()
        );
        let e = ctx(&[("k", "d")])
            .choice("k", "a", &options[..2])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            SimError::BadParam("k=d: use a or b".into()).to_string()
        );
    }

    #[test]
    fn a_range_refuses_values_outside_it_and_floats_that_are_not_finite() {
        let mut c = ctx(&[("x", "0.5"), ("y", "inf"), ("n", "0")]);
        assert_eq!(c.range("x", 1.0, 0.0.., "a number ≥ 0").unwrap(), 0.5);
        let e = c.range("y", 1.0, 0.0.., "a number ≥ 0").unwrap_err();
        assert_eq!(
            e.to_string(),
            SimError::BadParam("y=inf: use a number ≥ 0".into()).to_string()
        );
        assert!(c.range("n", 2u32, 1..=3, "1 ..= 3").is_err());
        assert_eq!(c.range("absent", 2u32, 1..=3, "1 ..= 3").unwrap(), 2);
    }
}
