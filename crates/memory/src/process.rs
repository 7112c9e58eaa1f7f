//! What the kernel says about this process: its resident set (`/proc/self/status`), the
//! files mapped into its address space (`/proc/self/maps`) and which of its threads are running
//! (`/proc/self/task`).

use std::path::{Path, PathBuf};

/// Resident and peak resident bytes of this process, from `/proc/self/status`
/// (`VmRSS`, `VmHWM`). `None` where the file does not exist (not Linux).
pub fn resident_bytes() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some((
        status_kibibytes(&status, "VmRSS:")? * 1024,
        status_kibibytes(&status, "VmHWM:")? * 1024,
    ))
}

/// The value of a `name:   1234 kB` line of `/proc/self/status`.
fn status_kibibytes(status: &str, name: &str) -> Option<u64> {
    let rest = status.lines().find_map(|line| line.strip_prefix(name))?;
    rest.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Bytes of address space mapped from any of `files`, read from `/proc/self/maps`.
/// Zero when none of them is mapped (or where the file does not exist).
pub fn mapped_bytes_of(files: &[PathBuf]) -> u64 {
    let canonical: Vec<PathBuf> = files
        .iter()
        .map(|file| file.canonicalize().unwrap_or_else(|_| file.clone()))
        .collect();
    mapped_bytes_where(|path| canonical.iter().any(|file| file == path))
}

/// Bytes of address space mapped from files inside `folder` (canonical path), read from
/// `/proc/self/maps`. Zero when none is mapped (or where the file does not exist).
pub fn mapped_bytes_under(folder: &Path) -> u64 {
    mapped_bytes_where(|path| path.starts_with(folder))
}

/// The sum of the mappings of `/proc/self/maps` whose path `wanted` accepts.
fn mapped_bytes_where(wanted: impl Fn(&Path) -> bool) -> u64 {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    maps.lines()
        .filter_map(parse_mapping)
        .filter(|(path, _)| wanted(path))
        .map(|(_, bytes)| bytes)
        .sum()
}

/// One line of `/proc/self/maps` (`start-end perms offset dev inode pathname`): its path and
/// its length in bytes (an anonymous mapping has an empty path); `None` for a line that does
/// not parse.
fn parse_mapping(line: &str) -> Option<(&Path, u64)> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let pathname = fields.nth(4)?.trim();
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    Some((Path::new(pathname), end.checked_sub(start)?))
}

/// How many threads of this process, the caller excepted, are running, waiting for a CPU or
/// waiting for the disk (state `R` or `D` in `/proc/self/task/<id>/stat`; `D` is a page fault
/// on code or data not yet read from disk, as on a program's first run): such a thread is not
/// asleep waiting for work, and may yet allocate or free. A thread that has returned from its
/// function but still runs its thread-local destructors is counted until it is gone. `None`
/// where `/proc` cannot say (not Linux).
pub fn other_runnable_threads() -> Option<usize> {
    // `/proc/thread-self` links to `<pid>/task/<caller's id>`.
    let caller = std::fs::read_link("/proc/thread-self").ok()?;
    let caller = caller.file_name()?.to_owned();
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let runnable = tasks
        .filter_map(Result::ok)
        .filter(|task| task.file_name() != caller)
        // A thread that ended between the listing and the read is not running.
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter(|stat| matches!(thread_state(stat), Some('R' | 'D')))
        .count();
    Some(runnable)
}

/// Minor page faults of this process so far (`minflt`, the tenth field of `/proc/self/stat`):
/// first touches of pages that needed no disk read, as a fresh heap or mapped buffer costs.
/// `None` where `/proc` cannot say (not Linux).
pub fn minor_page_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the name: the state (field 3), then fields 4 to 9, then `minflt`.
    stat_fields_after_name(&stat)?.nth(7)?.parse().ok()
}

/// The state letter of a `/proc/<pid>/task/<id>/stat` line (`id (name) S ...`).
fn thread_state(stat: &str) -> Option<char> {
    stat_fields_after_name(stat)?.next()?.chars().next()
}

/// The fields of a `/proc/.../stat` line after the command name, from the state on. The name
/// may hold spaces and parentheses, so the fields are read after the last `)`.
fn stat_fields_after_name(stat: &str) -> Option<impl Iterator<Item = &str>> {
    let (_, after_name) = stat.rsplit_once(')')?;
    Some(after_name.split_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_fields_after_a_name_with_spaces_and_parentheses_are_counted_from_the_state() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 1234 0 0 0";
        assert_eq!(thread_state(stat), Some('S'));
        assert_eq!(stat_fields_after_name(stat).unwrap().nth(7), Some("1234"));
        assert!(stat_fields_after_name("no name here").is_none());
        assert!(minor_page_faults().expect("Linux has /proc/self/stat") > 0);
    }

    #[test]
    fn resident_bytes_are_positive_and_peak_is_at_least_current() {
        let (now, peak) = resident_bytes().expect("Linux has /proc/self/status");
        assert!(now > 0);
        assert!(peak >= now);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no file-backed memory maps")]
    fn a_mapped_file_is_counted_and_then_gone() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("mapped.bin");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; 3 * 4096]).unwrap();
        drop(file);
        let files = vec![path.clone()];
        assert_eq!(mapped_bytes_of(&files), 0);
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is private to this test's temporary folder and nobody writes it.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        assert_eq!(map[0], 7);
        assert_eq!(mapped_bytes_of(&files), 3 * 4096);
        let canonical_folder = folder.path().canonicalize().unwrap();
        assert_eq!(mapped_bytes_under(&canonical_folder), 3 * 4096);
        drop(map);
        assert_eq!(mapped_bytes_of(&files), 0);
        assert_eq!(mapped_bytes_under(&canonical_folder), 0);
    }

    #[test]
    fn lines_of_the_maps_file_parse_into_path_and_length() {
        let line = "7f0000000000-7f0000003000 r--s 00000000 08:01 1234                       \
                    /data/train-images-idx3-ubyte";
        assert_eq!(
            parse_mapping(line),
            Some((Path::new("/data/train-images-idx3-ubyte"), 0x3000))
        );
        let anonymous = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ";
        assert_eq!(parse_mapping(anonymous), Some((Path::new(""), 0x1000)));
        assert_eq!(parse_mapping("not a mapping"), None);
    }

    #[test]
    fn a_thread_state_is_read_after_the_name_whatever_the_name_holds() {
        assert_eq!(thread_state("4242 (reclaim) S 1 4242 4242 0"), Some('S'));
        assert_eq!(thread_state("4243 (a) b (R) c) R 1 2 3"), Some('R'));
        assert_eq!(thread_state("4244 (no state)"), None);
        assert_eq!(thread_state("not a stat line"), None);
    }

    #[test]
    fn status_lines_are_read_in_kibibytes() {
        let status = "Name:\treclaim\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_kibibytes(status, "VmRSS:"), Some(1024));
        assert_eq!(status_kibibytes(status, "VmHWM:"), Some(2048));
        assert_eq!(status_kibibytes(status, "VmSwap:"), None);
    }
}
