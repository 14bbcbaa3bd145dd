//! What machine this is, as benchmarks and run folders name it.

/// The CPU's model name, as `lscpu` prints it (`/proc/cpuinfo`'s `model name`), followed by
/// its family and model numbers where the system gives them (virtual machines often name
/// only the vendor's line, "AMD EPYC", for several generations: family 25 is Zen 3 and 4,
/// 26 Zen 5), e.g. `AMD EPYC (family 25, model 17)`; the architecture (`x86_64`,
/// `aarch64`, …) where the system does not name the model.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    // The first processor's fields (every processor of a machine has the same).
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let Some(name) = field("model name") else {
        return std::env::consts::ARCH.to_string();
    };
    match (field("cpu family"), field("model")) {
        (Some(family), Some(model)) => format!("{name} (family {family}, model {model})"),
        _ => name,
    }
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
            let name = model.split(" (family").next().unwrap();
            assert!(info.contains(name), "{model}");
            if info.contains("cpu family") {
                assert!(model.contains("(family "), "{model}");
            }
        }
    }
}
