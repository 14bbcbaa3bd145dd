//! Config plumbing shared by every algorithm: range checks whose errors name the field and
//! the allowed range, and TOML loading that rejects unknown fields.

use emberlab_core::{Error, Result};
use serde::de::DeserializeOwned;

/// A config that can check its own values.
pub trait Validate {
    /// Returns an error naming the first field outside its allowed range. The default
    /// accepts every value: for configs whose types already say what is allowed (`NonZero…`
    /// widths, enums), or whose learner's constructor checks the rest.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
}

/// Parses a config from TOML text (unknown fields are errors: the configs are
/// `deny_unknown_fields`) and validates it.
pub fn from_toml<T: DeserializeOwned + Validate>(text: &str) -> Result<T> {
    let config: T = toml::from_str(text).map_err(|e| {
        Error::invalid(
            "config",
            e.message().to_string(),
            "a valid TOML config with known fields",
        )
    })?;
    config.validate()?;
    Ok(config)
}

/// `lo <= value <= hi`, or an error naming `field`.
pub fn check_range(field: &str, value: f64, lo: f64, hi: f64) -> Result<()> {
    if value.is_finite() && (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(Error::invalid(field, value, format!("[{lo}, {hi}]")))
    }
}

/// `lo < value <= hi`, or an error naming `field`.
pub fn check_open_closed(field: &str, value: f64, lo: f64, hi: f64) -> Result<()> {
    if value.is_finite() && value > lo && value <= hi {
        Ok(())
    } else {
        Err(Error::invalid(field, value, format!("({lo}, {hi}]")))
    }
}

/// `value >= 1`, or an error naming `field`.
pub fn check_positive(field: &str, value: usize) -> Result<()> {
    if value >= 1 {
        Ok(())
    } else {
        Err(Error::invalid(field, value, ">= 1"))
    }
}

/// Hidden widths: at least one layer, none zero.
pub fn check_hidden(field: &str, hidden: &[usize]) -> Result<()> {
    if hidden.is_empty() || hidden.contains(&0) {
        Err(Error::invalid(
            field,
            format!("{hidden:?}"),
            "one or more widths >= 1",
        ))
    } else {
        Ok(())
    }
}

/// Widths of optional layers (e.g. after an image encoder): none zero, possibly none.
pub(crate) fn check_widths(field: &str, widths: &[usize]) -> Result<()> {
    if widths.contains(&0) {
        Err(Error::invalid(
            field,
            format!("{widths:?}"),
            "widths >= 1 (or none)",
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_the_field() {
        assert!(check_range("gamma", 0.99, 0.0, 1.0).is_ok());
        let e = check_range("gamma", 1.5, 0.0, 1.0).unwrap_err().to_string();
        assert!(
            e.contains("gamma") && e.contains("1.5") && e.contains("[0, 1]"),
            "{e}"
        );
        assert!(check_range("gamma", f64::NAN, 0.0, 1.0).is_err());
        assert!(check_open_closed("tau", 0.0, 0.0, 1.0).is_err());
        assert!(check_open_closed("tau", 1.0, 0.0, 1.0).is_ok());
        assert!(check_positive("batch_size", 0).is_err());
        assert!(check_hidden("hidden", &[]).is_err());
        assert!(check_hidden("hidden", &[64, 0]).is_err());
    }
}
