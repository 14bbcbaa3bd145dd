//! One Python process stepping one Gymnasium environment (`bridge.py`), and the binary
//! protocol over its pipes. Its stderr is drained by a thread (so that a chatty
//! environment never blocks) and its last lines name what went wrong when it dies.

use emberlab_core::{BoxSpace, Discrete, Error, Result, Space};
use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The variable naming the Python interpreter (default `python3`).
pub const PYTHON_VAR: &str = "EMBER_PYTHON";
const SCRIPT: &str = include_str!("bridge.py");
/// The pipe helpers every worker script starts with.
const PIPE: &str = include_str!("pipe.py");
/// How much of the worker's stderr is kept for error messages.
const TAIL: usize = 4096;

/// A running worker.
pub(crate) struct Worker {
    label: String,
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

/// What a step returned.
pub(crate) struct Reply {
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
}

/// The interpreter the workers run: the one named by `EMBER_PYTHON` (when set and not
/// empty), else `python3`.
pub fn default_python() -> String {
    std::env::var(PYTHON_VAR)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

impl Worker {
    /// Starts `python -u -c bridge.py ID` and reads its spaces.
    ///
    /// # Errors
    /// No Python interpreter, no `gymnasium` in it, an unknown id or an unsupported space
    /// (the worker's own message).
    pub(crate) fn start(python: &str, id: &str) -> Result<(Self, Space, Space)> {
        let mut worker = Worker::spawn(python, SCRIPT, &[id], format!("gym:{id}"))?;
        let tag = worker.tag()?;
        if tag != b'H' {
            return Err(worker.unexpected(tag, "its spaces"));
        }
        let obs = worker.space("observation")?;
        let act = worker.space("action")?;
        Ok((worker, obs, act))
    }

    /// Starts `python -u -c SCRIPT ARGS...` (`pipe.py`'s helpers first) with piped stdin and
    /// stdout, its stderr kept (the last few kilobytes) for error messages; `label` names it
    /// in them.
    ///
    /// # Errors
    /// No Python interpreter at `python`.
    pub(crate) fn spawn(python: &str, script: &str, args: &[&str], label: String) -> Result<Self> {
        let program = format!("{PIPE}\n{script}");
        let mut child = Command::new(python)
            .args(["-u", "-c", &program])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::Unavailable {
                what: format!("Python for {label}"),
                hint: format!(
                    "cannot run `{python}` ({e}); install Python with gymnasium, or set \
                     {PYTHON_VAR} to an interpreter that has it"
                ),
            })?;
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL)));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                    t.extend(&buf[..n]);
                    let excess = t.len().saturating_sub(TAIL);
                    t.drain(..excess);
                }
            });
        }
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both pipes were requested");
        };
        Ok(Worker {
            label,
            child,
            to: BufWriter::new(to),
            from: BufReader::new(from),
            stderr,
        })
    }

    fn dead(&mut self, what: &str) -> Error {
        // A worker that closed its pipe is usually exiting: give it (and the drain thread,
        // for the last words) half a second.
        let mut status = None;
        for _ in 0..10 {
            status = self.child.try_wait().ok().flatten();
            if status.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        let status = status.map_or("still running".to_string(), |s| s.to_string());
        let mut tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(tail.make_contiguous()).into_owned();
        let last = text
            .trim()
            .lines()
            .last()
            .unwrap_or("no output")
            .to_string();
        Error::Unavailable {
            what: format!("{} worker", self.label),
            hint: format!("it stopped answering while {what} ({status}); its last words: {last}"),
        }
    }

    pub(crate) fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        if self.from.read_exact(buf).is_err() {
            return Err(self.dead(what));
        }
        Ok(())
    }

    pub(crate) fn tag(&mut self) -> Result<u8> {
        let mut t = [0u8];
        self.read_exact(&mut t, "waiting for an answer")?;
        Ok(t[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b, "reading a length")?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b, "reading a number")?;
        Ok(u64::from_le_bytes(b))
    }

    fn f32s(&mut self, out: &mut [f32]) -> Result<()> {
        let mut b = vec![0u8; out.len() * 4];
        self.read_exact(&mut b, "reading values")?;
        for (o, c) in out.iter_mut().zip(b.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }

    /// The error for a tag other than the expected one: the worker's `E` message, or a
    /// protocol error.
    pub(crate) fn unexpected(&mut self, tag: u8, what: &str) -> Error {
        if tag != b'E' {
            return Error::Unavailable {
                what: format!("{} worker", self.label),
                hint: format!("protocol error: tag {tag:#x} while expecting {what}"),
            };
        }
        let message = self.u32().and_then(|n| {
            let mut b = vec![0u8; n as usize];
            self.read_exact(&mut b, "reading its error")?;
            Ok(String::from_utf8_lossy(&b).into_owned())
        });
        match message {
            Ok(m) => Error::Unavailable {
                what: self.label.clone(),
                hint: m,
            },
            Err(e) => e,
        }
    }

    fn space(&mut self, what: &str) -> Result<Space> {
        match self.tag()? {
            b'B' => {
                let n = self.u32()? as usize;
                let (mut low, mut high) = (vec![0.0; n], vec![0.0; n]);
                self.f32s(&mut low)?;
                self.f32s(&mut high)?;
                Ok(Space::Box(BoxSpace::new(low, high)?))
            }
            b'D' => {
                let n = self.u64()?;
                let n = usize::try_from(n).map_err(|_| {
                    Error::invalid(format!("{} {what} space", self.label), n, "a usize")
                })?;
                Ok(Space::Discrete(Discrete::new(n)?))
            }
            other => Err(self.unexpected(other, "a space")),
        }
    }

    pub(crate) fn send(&mut self, bytes: &[&[u8]]) -> Result<()> {
        let ok = bytes.iter().all(|b| self.to.write_all(b).is_ok()) && self.to.flush().is_ok();
        if ok {
            Ok(())
        } else {
            Err(self.dead("sending a request"))
        }
    }

    /// `env.reset(seed=seed)`; the observation goes into `obs`.
    pub(crate) fn reset(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        let head = [b'R', u8::from(seed.is_some())];
        self.send(&[&head, &seed.unwrap_or(0).to_le_bytes()])?;
        match self.tag()? {
            b'O' => self.f32s(obs),
            other => Err(self.unexpected(other, "an observation")),
        }
    }

    /// `env.step(action)`: a continuous action as `f32`s or a discrete one.
    pub(crate) fn step(&mut self, action: StepAction<'_>, obs: &mut [f32]) -> Result<Reply> {
        match action {
            StepAction::Continuous(a) => {
                let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
                self.send(&[b"S", &bytes])?;
            }
            StepAction::Discrete(a) => self.send(&[b"S", &(a as u64).to_le_bytes()])?,
        }
        match self.tag()? {
            b'T' => {
                self.f32s(obs)?;
                let mut rest = [0u8; 10];
                self.read_exact(&mut rest, "reading a step")?;
                let reward = f64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
                Ok(Reply {
                    reward,
                    terminated: rest[8] != 0,
                    truncated: rest[9] != 0,
                })
            }
            other => Err(self.unexpected(other, "a step")),
        }
    }
}

/// An action as the worker takes it.
pub(crate) enum StepAction<'a> {
    Continuous(&'a [f32]),
    Discrete(usize),
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.to.write_all(b"Q").and_then(|()| self.to.flush());
        // A worker that does not leave within a second is killed.
        for _ in 0..20 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
