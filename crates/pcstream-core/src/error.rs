//! Errors a user can cause (bad configuration, unknown names). Bugs panic instead.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("SSD config {0}: {1}; see the preset files (pcstream presets) for the keys")]
    Parse(String, String),
    #[error("unknown SSD preset '{0}'; use one of: paper, small, or a path to a .toml file")]
    UnknownPreset(String),
    #[error("impossible SSD geometry: {0}")]
    Impossible(String),
    /// The device's engine state does not fit the memory available (the message has the figures).
    #[error("{0}")]
    Memory(String),
}

#[derive(Debug, Error)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("unknown policy '{0}'; known policies: {1}")]
    UnknownPolicy(String, String),
    #[error("bad policy parameter: {0}")]
    BadParam(String),
    #[error("request {index}: {what}")]
    BadRequest { index: u64, what: String },
    #[error("{0}")]
    State(String),
}
