//! One figure `ember bench` measured (every bench target returns a list of them).

/// One measured figure.
pub struct Figure {
    /// What was measured (`replay/return_weighted_k256`).
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
}
