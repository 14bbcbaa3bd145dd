//! Who may talk to a server: a shared token checked on every call and stream, and TLS
//! (rustls): the server's certificate and key, optionally client certificates (mutual TLS).
//!
//! Tokens come from a file or an environment variable, never from a command line (which
//! `ps` shows); they are compared in constant time. A call without the right token gets
//! `UNAUTHENTICATED`, is counted ([`crate::GrpcServer::refused`]) and never reaches a
//! service. [`SelfSigned`] makes a certificate and key for a cluster of one's own (what
//! `ember launch` uses on loopback).

use emberlab_core::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use subtle::ConstantTimeEq;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Certificate, Identity};
use tonic::{Request, Status};

/// The metadata key the token travels in (`authorization: Bearer <token>`).
const AUTHORIZATION: &str = "authorization";

/// The fewest characters a token may have.
pub const MIN_TOKEN_LEN: usize = 16;

/// A shared secret; its `Debug` does not show it.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(<{} characters>)", self.0.len())
    }
}

impl Token {
    /// A token from its text: printable ASCII without spaces, at least [`MIN_TOKEN_LEN`]
    /// characters.
    ///
    /// # Errors
    /// A shorter token, or one with other characters (`what` names where it came from).
    pub fn new(text: &str, what: &str) -> Result<Token> {
        if text.len() < MIN_TOKEN_LEN {
            return Err(Error::invalid(
                "token",
                what,
                format!(
                    "{} characters, at least {MIN_TOKEN_LEN} are needed",
                    text.len()
                ),
            ));
        }
        if let Some(c) = text.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(Error::invalid(
                "token",
                what,
                format!("holds {c:?}: only printable ASCII without spaces"),
            ));
        }
        Ok(Token(text.into()))
    }

    /// The token in a file (one line; surrounding whitespace, such as the newline a Secret
    /// mount or `echo` leaves, is ignored).
    ///
    /// # Errors
    /// The file cannot be read, or its token is invalid ([`Token::new`]).
    pub fn from_file(path: &Path) -> Result<Token> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Unavailable {
            what: format!("the token file {}", path.display()),
            hint: e.to_string(),
        })?;
        Token::new(text.trim(), &format!("the token file {}", path.display()))
    }

    /// The token in the environment variable `var`, if set.
    ///
    /// # Errors
    /// The variable is set but not valid Unicode, or its token is invalid.
    pub fn from_env(var: &str) -> Result<Option<Token>> {
        match std::env::var(var) {
            Ok(text) => Token::new(text.trim(), &format!("${var}")).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(Error::invalid("token", format!("${var}"), e.to_string())),
        }
    }

    /// A fresh random token (256 bits from the operating system, as 64 hex digits).
    ///
    /// # Errors
    /// The operating system's generator failed.
    pub fn generate() -> Result<Token> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| Error::Unavailable {
            what: "random bytes for a token".into(),
            hint: e.to_string(),
        })?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Token::new(&hex, "a generated token")
    }

    /// The token's text (to write it into a file of one's own).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    fn header(&self) -> MetadataValue<Ascii> {
        // Checked in `new`: printable ASCII only.
        format!("Bearer {}", self.0)
            .parse()
            .expect("a token is printable ASCII")
    }

    fn matches(&self, header: &[u8]) -> bool {
        let Some(given) = header.strip_prefix(b"Bearer ") else {
            return false;
        };
        // Lengths may differ openly; equal lengths are compared in constant time.
        given.len() == self.0.len() && bool::from(given.ct_eq(self.0.as_bytes()))
    }
}

/// PEM text read from a file, with the file named in errors.
fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>> {
    let pem = std::fs::read(path).map_err(|e| Error::Unavailable {
        what: format!("the {what} {}", path.display()),
        hint: e.to_string(),
    })?;
    if !pem.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(Error::invalid(
            what,
            path.display().to_string(),
            "not a PEM file (no `-----BEGIN` line)",
        ));
    }
    Ok(pem)
}

/// A server's TLS: its certificate chain and key, and optionally the CA that client
/// certificates must be signed by (mutual TLS: clients without one are refused).
#[derive(Clone)]
pub struct ServerTls {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mutual", &self.client_ca.is_some())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// From PEM text: the certificate (chain) and its private key.
    pub fn from_pem(cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> ServerTls {
        ServerTls {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
        }
    }

    /// From PEM files: the certificate (chain), its key and, for mutual TLS, the CA of the
    /// clients' certificates.
    ///
    /// # Errors
    /// A file cannot be read or is not PEM.
    pub fn from_files(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<ServerTls> {
        Ok(ServerTls {
            cert: read_pem(cert, "TLS certificate")?,
            key: read_pem(key, "TLS key")?,
            client_ca: client_ca
                .map(|p| read_pem(p, "client CA certificate"))
                .transpose()?,
        })
    }

    /// Requires client certificates signed by `ca` (PEM).
    pub fn with_client_ca(mut self, ca: impl Into<Vec<u8>>) -> ServerTls {
        self.client_ca = Some(ca.into());
        self
    }

    pub(crate) fn config(&self) -> tonic::transport::ServerTlsConfig {
        let mut config = tonic::transport::ServerTlsConfig::new()
            .identity(Identity::from_pem(&self.cert, &self.key));
        if let Some(ca) = &self.client_ca {
            config = config.client_ca_root(Certificate::from_pem(ca));
        }
        config
    }
}

/// A client's TLS: the CA that signed the server's certificate, the name to check it
/// against, and optionally a client certificate and key (for mutual TLS).
#[derive(Clone)]
pub struct ClientTls {
    ca: Vec<u8>,
    domain: Option<String>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("domain", &self.domain)
            .field("client_certificate", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Trusts the CA in `ca` (PEM); the server's certificate is checked against the host
    /// of the address dialled unless [`ClientTls::with_domain`] names another.
    pub fn from_pem(ca: impl Into<Vec<u8>>) -> ClientTls {
        ClientTls {
            ca: ca.into(),
            domain: None,
            identity: None,
        }
    }

    /// From PEM files: the CA and, for mutual TLS, the client's certificate and key.
    ///
    /// # Errors
    /// A file cannot be read or is not PEM.
    pub fn from_files(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<ClientTls> {
        Ok(ClientTls {
            ca: read_pem(ca, "CA certificate")?,
            domain: None,
            identity: identity
                .map(|(c, k)| {
                    Ok::<_, Error>((
                        read_pem(c, "client certificate")?,
                        read_pem(k, "client key")?,
                    ))
                })
                .transpose()?,
        })
    }

    /// Checks the server's certificate against `domain` instead of the dialled host.
    pub fn with_domain(mut self, domain: impl Into<String>) -> ClientTls {
        self.domain = Some(domain.into());
        self
    }

    /// Presents `cert` and `key` (PEM) to a server that asks for client certificates.
    pub fn with_identity(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> ClientTls {
        self.identity = Some((cert.into(), key.into()));
        self
    }

    pub(crate) fn config(&self, host: &str) -> tonic::transport::ClientTlsConfig {
        let mut config = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .domain_name(self.domain.clone().unwrap_or_else(|| host.to_string()));
        if let Some((cert, key)) = &self.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        config
    }
}

/// What a server demands of its peers: a token, TLS, both, or (explicitly) neither.
#[derive(Clone, Debug, Default)]
pub struct ServerSecurity {
    /// The token every call must carry; `None` takes calls without one.
    pub token: Option<Token>,
    /// TLS; `None` serves plain text.
    pub tls: Option<ServerTls>,
}

impl ServerSecurity {
    /// No token, no TLS: anyone who reaches the port is served. For tests and loopback.
    pub fn insecure() -> ServerSecurity {
        ServerSecurity::default()
    }

    /// Whether neither a token nor TLS is set.
    pub fn is_insecure(&self) -> bool {
        self.token.is_none() && self.tls.is_none()
    }
}

/// What a client presents: the token and its TLS settings.
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    /// The token sent with every call.
    pub token: Option<Token>,
    /// TLS (`https://`); `None` dials plain text.
    pub tls: Option<ClientTls>,
}

impl ClientSecurity {
    /// No token, no TLS.
    pub fn insecure() -> ClientSecurity {
        ClientSecurity::default()
    }

    /// Whether it dials plain text (no TLS): a TLS server's refusals then say so.
    pub fn is_plain(&self) -> bool {
        self.tls.is_none()
    }
}

/// The server side of the token: refuses calls without it, and counts them.
#[derive(Clone)]
pub(crate) struct TokenCheck {
    pub(crate) token: Option<Token>,
    pub(crate) refused: Arc<AtomicU64>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> std::result::Result<Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(request);
        };
        let given = request.metadata().get(AUTHORIZATION);
        if given.is_some_and(|v| token.matches(v.as_bytes())) {
            return Ok(request);
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        Err(Status::unauthenticated(if given.is_none() {
            "no token: this server takes calls with its token only"
        } else {
            "wrong token"
        }))
    }
}

/// The client side of the token: adds it to every call.
#[derive(Clone)]
pub struct TokenAuth {
    header: Option<MetadataValue<Ascii>>,
}

impl TokenAuth {
    pub(crate) fn new(token: Option<&Token>) -> TokenAuth {
        TokenAuth {
            header: token.map(Token::header),
        }
    }
}

impl tonic::service::Interceptor for TokenAuth {
    fn call(&mut self, mut request: Request<()>) -> std::result::Result<Request<()>, Status> {
        if let Some(h) = &self.header {
            request.metadata_mut().insert(AUTHORIZATION, h.clone());
        }
        Ok(request)
    }
}

/// A self-signed certificate and its key (PEM), for a cluster of one's own: clients
/// trust the certificate itself as their CA.
#[derive(Clone)]
pub struct SelfSigned {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM, PKCS #8).
    pub key_pem: String,
}

impl std::fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSigned").finish_non_exhaustive()
    }
}

/// Where [`SelfSigned::write`] put the files (the key names of a Kubernetes TLS Secret).
#[derive(Clone, Debug)]
pub struct SecurityFiles {
    /// `tls.crt`: the server's certificate.
    pub cert: PathBuf,
    /// `tls.key`: its private key (mode 0600).
    pub key: PathBuf,
    /// `ca.crt`: what clients trust (the same self-signed certificate).
    pub ca: PathBuf,
    /// `token` (mode 0600).
    pub token: PathBuf,
}

impl SelfSigned {
    /// A new key pair and a certificate for `names` (host names or IP addresses, e.g.
    /// `["localhost", "127.0.0.1"]`).
    ///
    /// # Errors
    /// A name that is neither a DNS name nor an IP address; key generation failed.
    pub fn generate(names: &[&str]) -> Result<SelfSigned> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let certified = rcgen::generate_simple_self_signed(names.clone())
            .map_err(|e| Error::invalid("certificate names", names.join(", "), e.to_string()))?;
        Ok(SelfSigned {
            cert_pem: certified.cert.pem(),
            key_pem: certified.signing_key.serialize_pem(),
        })
    }

    /// Writes `tls.crt`, `tls.key`, `ca.crt` (the certificate again, for clients) and
    /// `token` (from `token`) into `dir`, the key and the token readable by their owner
    /// only.
    ///
    /// # Errors
    /// The folder or a file cannot be written.
    pub fn write(&self, dir: &Path, token: &Token) -> Result<SecurityFiles> {
        let io = |what: &Path, e: std::io::Error| Error::Unavailable {
            what: format!("writing {}", what.display()),
            hint: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let files = SecurityFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            ca: dir.join("ca.crt"),
            token: dir.join("token"),
        };
        std::fs::write(&files.cert, &self.cert_pem).map_err(|e| io(&files.cert, e))?;
        std::fs::write(&files.ca, &self.cert_pem).map_err(|e| io(&files.ca, e))?;
        write_private(&files.key, self.key_pem.as_bytes()).map_err(|e| io(&files.key, e))?;
        write_private(&files.token, format!("{}\n", token.reveal()).as_bytes())
            .map_err(|e| io(&files.token, e))?;
        Ok(files)
    }
}

/// Writes a file that only its owner may read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// A TLS failure somewhere in `e`'s chain (a certificate the client does not trust, a
/// handshake with a plain-text server...): its text. Such failures are not worth a retry.
pub(crate) fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r.to_string());
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
        {
            return Some(r.to_string());
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_hidden() {
        assert!(Token::new("short", "test").is_err());
        assert!(Token::new("sixteen chars ok", "test").is_err(), "spaces");
        let t = Token::new("0123456789abcdef", "test").unwrap();
        assert!(!format!("{t:?}").contains("0123"));
        assert!(t.matches(b"Bearer 0123456789abcdef"));
        assert!(!t.matches(b"Bearer 0123456789abcdeg"));
        assert!(!t.matches(b"Bearer 0123456789abcdef0"));
        assert!(!t.matches(b"0123456789abcdef"));
        let g = Token::generate().unwrap();
        assert_eq!(g.reveal().len(), 64);
        assert_ne!(g.reveal(), Token::generate().unwrap().reveal());
    }

    #[test]
    fn token_files_are_trimmed_and_bad_ones_named() {
        let dir = std::env::temp_dir().join(format!("ember-token-{}", std::process::id()));
        let pair = SelfSigned::generate(&["localhost", "127.0.0.1"]).unwrap();
        let token = Token::generate().unwrap();
        let files = pair.write(&dir, &token).unwrap();
        assert_eq!(
            Token::from_file(&files.token).unwrap().reveal(),
            token.reveal()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the key is private");
        }
        let missing = Token::from_file(&dir.join("nope")).unwrap_err().to_string();
        assert!(missing.contains("nope"), "{missing}");
        let not_pem = ServerTls::from_files(&files.token, &files.key, None)
            .unwrap_err()
            .to_string();
        assert!(not_pem.contains("PEM"), "{not_pem}");
        assert!(ServerTls::from_files(&files.cert, &files.key, None).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
