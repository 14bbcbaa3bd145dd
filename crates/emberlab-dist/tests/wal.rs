//! `TransitionLog`: records come back after reopening, a torn tail is cut, damage in the
//! middle is refused (or, salvaging, set aside), resends are recognised, and a process killed with SIGKILL while
//! appending loses no acknowledged record.

use emberlab_dist::{Appended, Record, TransitionLog};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-wal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("transitions.wal")
}

fn record(actor: u64, run: u64, seq: u64) -> Record {
    Record {
        actor,
        run,
        seq,
        width: 3,
        values: (0..6)
            .map(|i| (actor * 100 + seq * 10 + i) as f32)
            .collect(),
    }
}

#[test]
fn records_come_back_after_reopening() {
    let path = temp("roundtrip");
    let (mut log, old) = TransitionLog::open(&path).unwrap();
    assert!(old.is_empty());
    let batch: Vec<Record> = (1..=5).map(|s| record(1, 7, s)).collect();
    assert_eq!(log.append(&batch).unwrap(), vec![Appended::Stored; 5]);
    log.append(&[record(2, 9, 1)]).unwrap();
    assert_eq!((log.records(), log.rows()), (6, 12));
    drop(log);
    let (log, back) = TransitionLog::open(&path).unwrap();
    assert_eq!(back.len(), 6);
    assert_eq!(&back[..5], &batch[..]);
    assert_eq!(back[5], record(2, 9, 1));
    assert_eq!(log.records(), 6);
}

#[test]
fn resends_are_recognised_and_a_new_run_starts_over() {
    let path = temp("dedup");
    let (mut log, _) = TransitionLog::open(&path).unwrap();
    log.append(&[record(1, 7, 1), record(1, 7, 2)]).unwrap();
    // A resend of 2 (its acknowledgement was lost), then 3; 3 twice in one call.
    assert_eq!(
        log.append(&[record(1, 7, 2), record(1, 7, 3), record(1, 7, 3)])
            .unwrap(),
        vec![Appended::Duplicate, Appended::Stored, Appended::Duplicate]
    );
    // The actor restarted: new run id, numbering from 1 again.
    assert_eq!(
        log.append(&[record(1, 8, 1)]).unwrap(),
        vec![Appended::Stored]
    );
    assert_eq!(log.records(), 4);
    drop(log);
    // Recognised after reopening too.
    let (mut log, _) = TransitionLog::open(&path).unwrap();
    assert_eq!(
        log.append(&[record(1, 8, 1)]).unwrap(),
        vec![Appended::Duplicate]
    );
    // A partial row is refused and nothing is written.
    let mut bad = record(3, 1, 1);
    bad.values.pop();
    assert!(log.append(&[record(3, 1, 2), bad]).is_err());
    assert_eq!(log.records(), 4);
}

/// A log of four records of actor 1 in a folder of its own: its path, its bytes and the
/// length of one record (after the 12-byte header).
fn four_records(name: &str) -> (PathBuf, Vec<u8>, usize) {
    let path = temp(name);
    let (mut log, _) = TransitionLog::open(&path).unwrap();
    for s in 1..=4 {
        log.append(&[record(1, 1, s)]).unwrap();
    }
    drop(log);
    let full = std::fs::read(&path).unwrap();
    let record_len = (full.len() - 12) / 4;
    (path, full, record_len)
}

#[test]
fn a_torn_tail_is_cut_and_damage_in_the_middle_is_refused() {
    let (path, full, record_len) = four_records("torn");
    // Every cut inside the last record: three records back, the file cut to them.
    for cut in [1, 5, 8, 20, record_len - 1] {
        std::fs::write(&path, &full[..full.len() - cut]).unwrap();
        let (mut log, back) = TransitionLog::open(&path).unwrap();
        assert_eq!(back.len(), 3, "cut {cut}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            12 + 3 * record_len
        );
        // Appending after the cut works and reads back.
        log.append(&[record(1, 1, 4)]).unwrap();
        drop(log);
        assert_eq!(TransitionLog::open(&path).unwrap().1.len(), 4);
    }
    // A flipped bit in the last record: cut (it was never acknowledged whole).
    let mut last = full.clone();
    *last.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &last).unwrap();
    assert_eq!(TransitionLog::open(&path).unwrap().1.len(), 3);
    // A flipped bit in the second record with two more after it: refused, file untouched.
    let mut middle = full.clone();
    middle[12 + record_len + 30] ^= 1;
    std::fs::write(&path, &middle).unwrap();
    let err = TransitionLog::open(&path).err().unwrap().to_string();
    assert!(err.contains("checksum"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), middle);
    // Not a log at all.
    std::fs::write(&path, b"hello world, not a log").unwrap();
    assert!(TransitionLog::open(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"hello world, not a log");
}

#[test]
fn salvaging_sets_damage_aside_and_keeps_every_good_record() {
    let (path, full, record_len) = four_records("salvage");
    // A readable log is opened as it is.
    let (_, back, salvaged) = TransitionLog::open_salvaging(&path).unwrap();
    assert_eq!(back.len(), 4);
    assert!(salvaged.asides.is_empty());
    // Damage in the second record: it goes aside whole, the others stay, in order.
    let mut middle = full.clone();
    middle[12 + record_len + 30] ^= 1;
    std::fs::write(&path, &middle).unwrap();
    let (mut log, back, salvaged) = TransitionLog::open_salvaging(&path).unwrap();
    let seqs: Vec<u64> = back.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [1, 3, 4]);
    assert!(salvaged.reason.contains("checksum"), "{salvaged:?}");
    let aside = &salvaged.asides[0];
    assert_eq!(
        std::fs::read(aside).unwrap(),
        &middle[12 + record_len..12 + 2 * record_len]
    );
    assert_eq!(salvaged.bytes, record_len as u64);
    // The rewritten log takes appends and reads back without salvaging.
    log.append(&[record(1, 1, 5)]).unwrap();
    drop(log);
    assert_eq!(TransitionLog::open(&path).unwrap().1.len(), 4);
    // A file of another format is renamed aside, and a new log started.
    std::fs::write(&path, b"EMBERWAL\x09\x00\x00\x00 a future format").unwrap();
    let (_, back, salvaged) = TransitionLog::open_salvaging(&path).unwrap();
    assert!(back.is_empty());
    let aside = &salvaged.asides[0];
    assert!(
        aside.to_string_lossy().contains(".unreadable-"),
        "{aside:?}"
    );
    assert!(std::fs::read(aside).unwrap().ends_with(b"a future format"));
    assert!(
        salvaged.reason.contains("format version 9"),
        "{}",
        salvaged.reason
    );
}

#[test]
fn segments_roll_release_what_a_checkpoint_covers_and_still_recognise_resends() {
    let path = temp("segments");
    let (mut log, _) = TransitionLog::open(&path).unwrap();
    // Each record is 8 + 28 + 24 = 60 bytes; the first segment's header 12, a later one's
    // 36 + 24 per actor in its resend table (3 here): 250 bytes hold 3 records, then 2.
    log.set_segment_bytes(250);
    for s in 1..=9 {
        log.append(&[record(s % 3, 1, s)]).unwrap();
    }
    assert_eq!((log.records(), log.rows()), (9, 18));
    let segments = log.segments();
    assert_eq!(segments.len(), 4, "{segments:?}");
    assert_eq!(segments[0], path);
    assert!(segments[1].to_string_lossy().ends_with(".0000000000000003"));
    // A checkpoint covering 5 records, replay keeping 4 rows: the segments of records 0..3
    // and 3..5 go (their rows are older than the newest 4 of 18); 5..7 is not covered.
    let released = log.release(5, 4).unwrap();
    assert_eq!(
        (released.segments, released.records, released.rows_in_window),
        (2, 5, 0)
    );
    assert!(!path.exists());
    assert_eq!(log.first_index(), 5);
    drop(log);
    // Reopened from its later segments: the records from index 5 on, read as a stream,
    // and resends of released batches still recognised (the segment header's table).
    let (mut log, reader) = TransitionLog::open_stream(&path).unwrap();
    let seqs: Vec<u64> = reader.map(|r| r.unwrap().seq).collect();
    assert_eq!(seqs, [6, 7, 8, 9]);
    assert_eq!((log.first_index(), log.records(), log.rows()), (5, 9, 18));
    log.set_segment_bytes(250);
    assert_eq!(
        log.append(&[record(1, 1, 1)]).unwrap(),
        [Appended::Duplicate]
    );
    assert_eq!(
        log.append(&[record(2, 1, 2)]).unwrap(),
        [Appended::Duplicate]
    );
    assert_eq!(log.append(&[record(1, 1, 10)]).unwrap(), [Appended::Stored]);
    // Over a disk budget, covered segments go even inside the replay window; never the
    // one appended to.
    log.set_budget(1);
    assert!(log.is_full());
    let released = log.release(u64::MAX, 1000).unwrap();
    assert_eq!(released.segments, 2);
    assert!(released.rows_in_window > 0);
    assert_eq!(log.segments().len(), 1);
    log.set_budget(u64::MAX);
    drop(log);
    let (log, back) = TransitionLog::open(&path).unwrap();
    assert_eq!(back.iter().map(|r| r.seq).collect::<Vec<_>>(), [10]);
    assert_eq!(log.records(), 10);
}

/// The child: appends batches of 4 records as fast as it can and prints the last sequence
/// number of each batch once `append` returned (its acknowledgement).
#[test]
fn child_appender() {
    let Ok(path) = std::env::var("EMBER_WAL_CHILD") else {
        return;
    };
    let (mut log, old) = TransitionLog::open(std::path::Path::new(&path)).unwrap();
    let mut seq = old.iter().map(|r| r.seq).max().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    loop {
        let batch: Vec<Record> = (1..=4).map(|i| record(5, 1, seq + i)).collect();
        log.append(&batch).unwrap();
        seq += 4;
        writeln!(out, "{seq}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_while_appending_loses_no_acknowledged_record() {
    let path = temp("kill");
    let mut acked = 0u64;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_appender",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("EMBER_WAL_CHILD", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Read acknowledgements for a while, then SIGKILL mid-stream.
        let until = std::time::Instant::now() + Duration::from_millis(150 + 100 * round);
        while std::time::Instant::now() < until {
            match lines.next() {
                Some(Ok(l)) => {
                    if let Ok(s) = l.trim().parse::<u64>() {
                        acked = acked.max(s);
                    }
                }
                _ => break,
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for l in lines.map_while(Result::ok) {
            if let Ok(s) = l.trim().parse::<u64>() {
                acked = acked.max(s);
            }
        }
        let (_, back) = TransitionLog::open(&path).unwrap();
        let stored: Vec<u64> = back.iter().map(|r| r.seq).collect();
        assert!(acked > 0, "the child acknowledged nothing");
        // Every acknowledged record is there, once, in order; at most the batch being
        // written when the kill came is beyond the last acknowledgement.
        assert_eq!(stored, (1..=stored.len() as u64).collect::<Vec<_>>());
        assert!(
            stored.len() as u64 >= acked,
            "round {round}: acked {acked}, stored {}",
            stored.len()
        );
        assert!(stored.len() as u64 <= acked + 4);
        acked = stored.len() as u64;
    }
}
