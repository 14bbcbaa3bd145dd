//! What machine this is, as benchmarks and run folders name it.

/// The CPU's model name, as `lscpu` prints it (`/proc/cpuinfo`'s `model name`); the
/// architecture (`x86_64`, `aarch64`, …) where the system does not name the model.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_model_is_named() {
        let model = super::cpu_model();
        assert!(!model.is_empty());
        if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo")
            && info.contains("model name")
        {
            assert!(info.contains(&model), "{model}");
        }
    }
}
