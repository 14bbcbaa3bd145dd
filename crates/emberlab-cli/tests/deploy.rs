//! The container image and Kubernetes manifests under `deploy/` agree with the binaries:
//! the manifests parse, the learner is a StatefulSet behind a headless Service with a
//! volume holding its folder, the actors are a Deployment that reaches the learner's pod
//! on the port it serves, both run the image the Dockerfile builds, every flag they pass
//! is one the `ember` subcommand takes, and both read the token and TLS files from the
//! Secret `ember keygen` makes the files of.

use serde::Deserialize;
use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const EMBER: &str = env!("CARGO_BIN_EXE_ember");

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// The documents of a multi-document YAML file.
fn documents(name: &str) -> Vec<Value> {
    let path = deploy().join("k8s").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

fn container(workload: &Value) -> &Value {
    let containers = workload["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .unwrap();
    assert_eq!(containers.len(), 1);
    &containers[0]
}

fn args(c: &Value) -> Vec<String> {
    c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| str_of(a).to_string())
        .collect()
}

/// The value after `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let i = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag}"));
    &args[i + 1]
}

/// Every `--flag` of `args` appears in `ember <subcommand> --help`.
fn flags_are_known(args: &[String]) {
    let out = Command::new(EMBER)
        .args([&args[0], "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for a in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(&format!("{a} ")) || help.contains(&format!("{a}\n")),
            "`ember {}` has no {a}",
            args[0]
        );
    }
}

#[test]
fn manifests_and_dockerfile_agree_with_the_binaries() {
    let dockerfile = std::fs::read_to_string(deploy().join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("-p emberlab-cli --bin ember"));
    assert!(dockerfile.contains("ENTRYPOINT [\"ember\"]"));
    let image = format!("ember:{}", env!("CARGO_PKG_VERSION"));
    assert!(
        dockerfile.contains(&format!("-t {image} .")),
        "the Dockerfile's tag is not {image}"
    );
    let exposed: u16 = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("EXPOSE "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    let learner = documents("learner.yaml");
    let service = kind(&learner, "Service");
    let set = kind(&learner, "StatefulSet");
    assert_eq!(
        service["spec"]["clusterIP"], "None",
        "the Service is not headless"
    );
    assert_eq!(set["spec"]["serviceName"], service["metadata"]["name"]);
    assert_eq!(set["spec"]["replicas"], 1);
    let labels = &set["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(&labels[k], v, "the Service does not select the learner pod");
    }
    let lc = container(set);
    assert_eq!(str_of(&lc["image"]), image);
    let la = args(lc);
    assert_eq!(la[0], "serve");
    flags_are_known(&la);
    let port: u16 = flag(&la, "--addr")
        .rsplit_once(':')
        .unwrap()
        .1
        .parse()
        .unwrap();
    assert_eq!(port, exposed);
    assert_eq!(lc["ports"][0]["containerPort"], u64::from(port));
    assert_eq!(service["spec"]["ports"][0]["port"], u64::from(port));
    let mount = &lc["volumeMounts"][0];
    let claim = &set["spec"]["volumeClaimTemplates"][0]["metadata"]["name"];
    assert_eq!(&mount["name"], claim);
    assert!(
        flag(&la, "--dir").starts_with(str_of(&mount["mountPath"])),
        "the learner's folder is not on its volume"
    );

    let actors = documents("actors.yaml");
    let deployment = kind(&actors, "Deployment");
    let ac = container(deployment);
    assert_eq!(str_of(&ac["image"]), image);
    let aa = args(ac);
    assert_eq!(aa[0], "actor");
    flags_are_known(&aa);
    let expected = format!(
        "{}-0.{}:{port}",
        str_of(&set["metadata"]["name"]),
        str_of(&service["metadata"]["name"])
    );
    assert_eq!(flag(&aa, "--connect"), expected);
    assert_eq!(flag(&aa, "--env"), flag(&la, "--env"));
    assert_eq!(
        flag(&aa, "--id"),
        "auto",
        "actors of a Deployment need ids of their own"
    );

    // TLS and the token, from one Secret mounted read-only.
    let secret = |workload: &Value, c: &Value| -> String {
        let mount = c["volumeMounts"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "keys")
            .expect("a `keys` mount");
        assert_eq!(mount["readOnly"], true);
        let volume = workload["spec"]["template"]["spec"]["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "keys")
            .expect("a `keys` volume");
        assert_eq!(volume["secret"]["secretName"], "ember-cluster");
        str_of(&mount["mountPath"]).to_string()
    };
    let keys = secret(set, lc);
    for (f, file) in [
        ("--token-file", "token"),
        ("--tls-cert", "tls.crt"),
        ("--tls-key", "tls.key"),
    ] {
        assert_eq!(flag(&la, f), format!("{keys}/{file}"));
    }
    let keys = secret(deployment, ac);
    for (f, file) in [("--token-file", "token"), ("--tls-ca", "ca.crt")] {
        assert_eq!(flag(&aa, f), format!("{keys}/{file}"));
    }
    assert!(!la.contains(&"--insecure".to_string()));
    assert!(!aa.contains(&"--insecure".to_string()));
    flags_are_known(&["keygen".into(), "--out".into(), "--name".into()]);
}

#[test]
fn keygen_writes_the_secret_s_files() {
    let dir = std::env::temp_dir().join(format!("ember-keygen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str]| {
        Command::new(EMBER)
            .args(["keygen", "--out"])
            .arg(&dir)
            .args([
                "--name",
                "ember-learner-0.ember-learner",
                "--name",
                "127.0.0.1",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in ["token", "tls.crt", "tls.key", "ca.crt"] {
        assert!(dir.join(file).is_file(), "no {file}");
    }
    let token = std::fs::read_to_string(dir.join("token")).unwrap();
    assert_eq!(token.trim().len(), 64);
    // The cluster's keys are not replaced by accident.
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert!(run(&["--force"]).status.success());
    assert_ne!(std::fs::read_to_string(dir.join("token")).unwrap(), token);
    std::fs::remove_dir_all(&dir).unwrap();
}
