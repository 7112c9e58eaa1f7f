//! `reclaim fetch` interrupted by Ctrl-C (SIGINT) in the middle of a download from a local
//! server that trickles: exit status 130, a message, and no partial file.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{scratch, text};

/// Serves one connection: headers announcing a large body, then one byte every 100 ms, for at
/// most 30 seconds. Returns the base URL.
fn trickling_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|count| count > 0) && line != "\r\n" {
            line.clear();
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
        for _ in 0..300 {
            if stream
                .write_all(&[0x1f])
                .and_then(|()| stream.flush())
                .is_err()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    base
}

fn partial_files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for item in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = item.path();
        if path.is_dir() {
            found.extend(partial_files(&path));
        } else if path.to_string_lossy().ends_with(".partial") {
            found.push(path);
        }
    }
    found
}

#[test]
fn ctrl_c_during_a_fetch_exits_130_and_leaves_no_partial_file() {
    let data = scratch("fetch-command", "interrupted");
    let base = trickling_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args(["fetch", "--offline", "--quiet", "--mirror", &base, "--data"])
        .arg(&data)
        .env_remove("RECLAIM_MIRROR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // The download is under way once its partial file exists.
    while partial_files(&data).is_empty() {
        assert!(Instant::now() < deadline, "the download never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "reclaim fetch ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("reclaim fetch did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.starts_with("interrupted: stopped while fetching"),
        "{stderr}"
    );
    assert!(stderr.contains(&base), "{stderr}");
    assert_eq!(partial_files(&data), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(data).unwrap();
}
