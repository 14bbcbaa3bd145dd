//! The one font of our pictures: DejaVu Sans, embedded by the `dejavu` crate and registered
//! with plotters' `ab_glyph` text renderer as the `sans-serif` family, so text renders with
//! no fontconfig and no system fonts.

use std::sync::OnceLock;

use anyhow::{Result, bail};
use plotters::style::{FontStyle, register_font};

/// The font family name our drawings use.
pub(crate) const FAMILY: &str = "sans-serif";

/// Registers DejaVu Sans (regular and bold) as [`FAMILY`] once per process.
pub(crate) fn ensure_fonts() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if !ok {
        bail!("the embedded DejaVu Sans font could not be registered with plotters");
    }
    Ok(())
}
