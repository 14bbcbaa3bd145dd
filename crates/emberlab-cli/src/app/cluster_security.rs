//! The token and TLS flags of `ember serve`, `ember actor` and `ember launch`.
//!
//! A learner serves TLS with a token unless `--insecure` says otherwise (it then warns).
//! The token is read from a file (`--token-file`) or from `EMBER_TOKEN`, never from the
//! command line, which other users see in `ps`.

use anyhow::{Context, Result, bail};
use clap::Args;
use emberlab_dist::grpc::security::SecurityFiles;
use emberlab_dist::{ClientSecurity, ClientTls, SelfSigned, ServerSecurity, ServerTls, Token};
use std::path::{Path, PathBuf};

/// The environment variable a token may come from instead of `--token-file`.
pub const TOKEN_VAR: &str = "EMBER_TOKEN";

/// What a learner demands of its actors.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeSecurity {
    /// File holding the token every actor must present (or set EMBER_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// TLS certificate (PEM) the learner presents.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this CA (PEM): mutual TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Serve plain text without a token: anyone who reaches the port can stream
    /// transitions into the replay and read the policy. Private networks only.
    #[arg(long, conflicts_with_all = ["token_file", "tls_cert", "tls_key", "tls_client_ca"])]
    pub insecure: bool,
}

/// What an actor presents to its learner.
#[derive(Args, Debug, Clone, Default)]
pub struct ActorSecurity {
    /// File holding the learner's token (or set EMBER_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The CA certificate (PEM) the learner's certificate is signed by (its own
    /// certificate, if self-signed).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Check the learner's certificate against this name instead of --connect's host.
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_domain: Option<String>,
    /// Client certificate (PEM) for a learner that asks for one (mutual TLS).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Dial plain text (a learner started with --insecure).
    #[arg(long, conflicts_with_all = ["tls_ca", "tls_cert", "tls_key", "tls_domain"])]
    pub insecure: bool,
}

/// `ember keygen`.
#[derive(Args, Debug, Clone)]
pub struct KeygenCmd {
    /// The folder to write token, tls.crt, tls.key and ca.crt into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A host name or IP address the learner is dialled by (repeatable), e.g. the pod's
    /// `ember-learner-0.ember-learner`.
    #[arg(long = "name", value_name = "NAME", required = true)]
    pub names: Vec<String>,
    /// Overwrite files already in the folder.
    #[arg(long)]
    pub force: bool,
}

/// Writes a new token and self-signed pair for `cmd.names` into `cmd.out`.
///
/// # Errors
/// Files already there (without `--force`); a name that is neither a host name nor an IP
/// address; a file that cannot be written.
pub fn keygen(cmd: &KeygenCmd) -> Result<SecurityFiles> {
    for name in ["token", "tls.crt", "tls.key", "ca.crt"] {
        let path = cmd.out.join(name);
        if path.exists() && !cmd.force {
            bail!(
                "{} exists: keep it, or pass --force to replace the cluster's keys",
                path.display()
            );
        }
    }
    let names: Vec<&str> = cmd.names.iter().map(String::as_str).collect();
    Ok(SelfSigned::generate(&names)?.write(&cmd.out, &Token::generate()?)?)
}

/// The token of `--token-file`, else of `EMBER_TOKEN`.
fn token(file: Option<&Path>) -> Result<Option<Token>> {
    Ok(match file {
        Some(f) => Some(Token::from_file(f)?),
        None => Token::from_env(TOKEN_VAR)?,
    })
}

impl ServeSecurity {
    /// The learner's settings; with `--insecure`, a warning on stderr.
    ///
    /// # Errors
    /// No TLS or no token without `--insecure`; an unreadable or invalid file.
    pub fn resolve(&self, addr: &str) -> Result<ServerSecurity> {
        if self.insecure {
            eprintln!(
                "warning: --insecure: the learner at {addr} serves plain text without a token; \
                 anyone who reaches the port can stream transitions into its replay and read \
                 its policy"
            );
            return Ok(ServerSecurity::insecure());
        }
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            bail!(
                "the learner serves TLS with a token: give --tls-cert FILE --tls-key FILE and \
                 --token-file FILE (or {TOKEN_VAR}); `ember launch` makes them for a loopback \
                 cluster; --insecure serves plain text without a token"
            );
        };
        let token = token(self.token_file.as_deref())?;
        if token.is_none() && self.tls_client_ca.is_none() {
            bail!(
                "the learner needs a token: --token-file FILE or {TOKEN_VAR} (or client \
                 certificates: --tls-client-ca FILE)"
            );
        }
        Ok(ServerSecurity {
            token,
            tls: Some(ServerTls::from_files(
                cert,
                key,
                self.tls_client_ca.as_deref(),
            )?),
        })
    }

    /// The flags as arguments (for a child `ember serve`).
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        for (flag, v) in [
            ("--token-file", &self.token_file),
            ("--tls-cert", &self.tls_cert),
            ("--tls-key", &self.tls_key),
            ("--tls-client-ca", &self.tls_client_ca),
        ] {
            if let Some(v) = v {
                a.extend([flag.to_string(), v.display().to_string()]);
            }
        }
        if self.insecure {
            a.push("--insecure".into());
        }
        a
    }

    /// For `ember launch`: a new token and self-signed pair for loopback in
    /// `dir/security/`, and the learner's and the actors' flags for them. With
    /// `--insecure`, both sides get `--insecure`.
    ///
    /// # Errors
    /// TLS or token flags of one's own (launch makes its own); a file that cannot be
    /// written.
    pub fn for_launch(&self, dir: &Path) -> Result<(ServeSecurity, Vec<String>)> {
        if self.insecure {
            return Ok((self.clone(), vec!["--insecure".into()]));
        }
        if self.token_file.is_some() || self.tls_cert.is_some() || self.tls_client_ca.is_some() {
            bail!(
                "`ember launch` makes its own token and certificate for its loopback cluster: \
                 drop --token-file and the --tls flags (or start `ember serve` and `ember \
                 actor` yourself)"
            );
        }
        let folder = dir.join("security");
        let files = SelfSigned::generate(&["localhost", "127.0.0.1"])?
            .write(&folder, &Token::generate()?)
            .with_context(|| {
                format!(
                    "writing the cluster's token and certificate into {}",
                    folder.display()
                )
            })?;
        let serve = ServeSecurity {
            token_file: Some(files.token.clone()),
            tls_cert: Some(files.cert.clone()),
            tls_key: Some(files.key),
            tls_client_ca: None,
            insecure: false,
        };
        let actor = vec![
            "--token-file".into(),
            files.token.display().to_string(),
            "--tls-ca".into(),
            files.ca.display().to_string(),
        ];
        Ok((serve, actor))
    }
}

impl ActorSecurity {
    /// The actor's settings.
    ///
    /// # Errors
    /// Neither `--tls-ca` nor `--insecure`; an unreadable or invalid file.
    pub fn resolve(&self) -> Result<ClientSecurity> {
        if self.insecure {
            return Ok(ClientSecurity::insecure());
        }
        let Some(ca) = &self.tls_ca else {
            bail!(
                "the actor dials its learner over TLS: give --tls-ca FILE (the learner's CA or \
                 self-signed certificate) and --token-file FILE (or {TOKEN_VAR}); --insecure \
                 dials a learner started with --insecure"
            );
        };
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            _ => None,
        };
        let mut tls = ClientTls::from_files(ca, identity)?;
        if let Some(d) = &self.tls_domain {
            tls = tls.with_domain(d.clone());
        }
        Ok(ClientSecurity {
            token: token(self.token_file.as_deref())?,
            tls: Some(tls),
        })
    }
}
