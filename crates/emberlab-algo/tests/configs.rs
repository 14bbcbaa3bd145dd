//! Configs: TOML round trips, unknown fields and out-of-range values are errors that name
//! the field, zoo presets exist for the published tasks.

use emberlab_algo::{
    A2cConfig, DqnConfig, OffPolicyConfig, OnPolicyConfig, ReinforceConfig, SacConfig,
    UpdateSchedule, Validate, from_toml,
};

#[test]
fn toml_overrides_defaults() {
    let c: SacConfig =
        from_toml("learning_rate = 0.001\nupdate_schedule = \"sequential\"\n").unwrap();
    assert_eq!(c.learning_rate, 1e-3);
    assert_eq!(c.update_schedule, UpdateSchedule::Sequential);
    assert_eq!(c.hidden, vec![256, 256]);
    let d: DqnConfig =
        from_toml("[exploration]\nstart = 1.0\nend = 0.02\nfraction = 0.2\n").unwrap();
    assert_eq!(d.exploration.end, 0.02);
    let a: A2cConfig = from_toml("optimizer = \"adam\"\nshared_trunk = true\n").unwrap();
    assert!(a.shared_trunk);
}

#[test]
fn a_typo_is_an_error_naming_the_field() {
    let e = from_toml::<SacConfig>("learning_rat = 0.001\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("learning_rat"), "{e}");
    let e = from_toml::<OffPolicyConfig>("batchsize = 64\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("batchsize"), "{e}");
    let e = from_toml::<SacConfig>("update_schedule = \"paralel\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("paralel"), "{e}");
}

#[test]
fn out_of_range_values_name_the_field_and_range() {
    let e = from_toml::<SacConfig>("gamma = 1.5\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("gamma") && e.contains("1.5") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = from_toml::<DqnConfig>("learning_rate = 0.0\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("learning_rate"), "{e}");
    let bad = OffPolicyConfig {
        batch_size: 512,
        replay: emberlab_algo::ReplayConfig {
            capacity: 256,
            ..Default::default()
        },
        ..OffPolicyConfig::default()
    };
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("batch_size") && e.contains("256"), "{e}");
    let e = ReinforceConfig {
        hidden: vec![],
        ..ReinforceConfig::default()
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(e.contains("hidden"), "{e}");
    assert!(
        OnPolicyConfig {
            n_steps: 0,
            ..OnPolicyConfig::default()
        }
        .validate()
        .is_err()
    );
}

#[test]
fn zoo_presets_cover_the_published_tasks() {
    assert_eq!(SacConfig::zoo("Pendulum-v1").unwrap().1.total_steps, 20_000);
    assert_eq!(DqnConfig::zoo("CartPole-v1").unwrap().1.gradient_steps, 128);
    assert_eq!(DqnConfig::zoo("Acrobot-v1").unwrap().1.total_steps, 100_000);
    assert_eq!(A2cConfig::zoo("CartPole-v1").unwrap().2, 8);
    let e = SacConfig::zoo("Pendulum-v0").unwrap_err().to_string();
    assert!(
        e.contains("Pendulum-v0") && e.contains("Pendulum-v1"),
        "{e}"
    );
}
