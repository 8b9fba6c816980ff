//! Where a sysctl gets its value at boot: the sysctl.d(5) files, read the way systemd-sysctl
//! and `sysctl --system` (procps) read them. Pure parsing and ordering here; listing the
//! directories is the only I/O, in [`boot_files`].

use std::path::{Path, PathBuf};

/// The directories sysctl.d(5) reads, most important first: a file in an earlier directory
/// hides a file of the same name in a later one.
pub const DIRS: [&str; 5] = ["/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"];
/// Read after every sysctl.d file by `sysctl --system` (Debian also links it as 99-sysctl.conf).
pub const SYSCTL_CONF: &str = "/etc/sysctl.conf";

/// One assignment found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub file: PathBuf,
    pub key: String,
    pub value: String,
}

/// The `key = value` lines of one file, keys in dotted form. Comments (`#`, `;`), blank lines
/// and lines without `=` are skipped; a leading `-` (systemd's "ignore errors") is dropped.
pub fn parse(file: &Path, text: &str) -> Vec<Assignment> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                return None;
            }
            let (key, value) = line.split_once('=')?;
            let key = normalize_key(key.trim().trim_start_matches('-').trim());
            (!key.is_empty()).then(|| Assignment { file: file.to_path_buf(), key, value: value.trim().to_string() })
        })
        .collect()
}

/// sysctl.d(5): keys use `.` or `/` as separator, whichever comes first; with `/`, any `.` in
/// the key is part of a name (an interface such as `eth0.100`) and stays literal.
fn normalize_key(key: &str) -> String {
    match key.find(['.', '/']) {
        Some(i) if key.as_bytes()[i] == b'/' => key.replace('.', "\u{0}").replace('/', ".").replace('\u{0}', "/"),
        _ => key.to_string(),
    }
}

/// The order in which the files are applied, given each directory's `*.conf` names (in
/// [`DIRS`] order): by file name, a name taken from the first directory that has it.
pub fn order(listings: &[(PathBuf, Vec<String>)]) -> Vec<PathBuf> {
    let mut chosen: std::collections::BTreeMap<&str, PathBuf> = std::collections::BTreeMap::new();
    for (dir, names) in listings {
        for name in names.iter().filter(|n| n.ends_with(".conf")) {
            chosen.entry(name.as_str()).or_insert_with(|| dir.join(name));
        }
    }
    chosen.into_values().collect()
}

/// Every assignment at boot, in the order applied (the last one for a key wins). With
/// `pretend`, the file at that path is taken to hold that text (present or not): what the
/// boot would do after an apply.
pub fn boot_assignments(pretend: Option<(&Path, &str)>) -> Vec<Assignment> {
    let listings: Vec<(PathBuf, Vec<String>)> = DIRS
        .iter()
        .map(|d| {
            let mut names: Vec<String> =
                std::fs::read_dir(d).map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
            if let Some((path, _)) = pretend.filter(|(p, _)| p.parent() == Some(Path::new(d))) {
                names.extend(path.file_name().map(|n| n.to_string_lossy().into_owned()));
            }
            (PathBuf::from(d), names)
        })
        .collect();
    let mut files = order(&listings);
    files.push(PathBuf::from(SYSCTL_CONF));
    files
        .iter()
        .filter_map(|f| match pretend {
            Some((path, text)) if path == f => Some(parse(f, text)),
            _ => std::fs::read(f).ok().map(|bytes| parse(f, &String::from_utf8_lossy(&bytes))),
        })
        .flatten()
        .collect()
}

/// The assignments that come after `file`'s and set one of its keys to another value: those
/// win at boot over `file`.
pub fn overridden(all: &[Assignment], file: &Path) -> Vec<Assignment> {
    let Some(last) = all.iter().rposition(|a| a.file == file) else { return Vec::new() };
    let ours = &all[..=last];
    all[last + 1..].iter().filter(|a| ours.iter().any(|o| o.file == file && o.key == a.key && o.value != a.value)).cloned().collect()
}

/// The assignment of `key` that wins at boot, if any file sets it.
pub fn winner<'a>(all: &'a [Assignment], key: &str) -> Option<&'a Assignment> {
    all.iter().rev().find(|a| a.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_sysctl_d_allows() {
        let f = Path::new("/x.conf");
        let text = "# comment\n; also comment\n\nnet.ipv4.tcp_congestion_control=bbr\n  net/core/default_qdisc = fq  \n-net.ipv4.x = 1\nnot an assignment\nnet/ipv4/conf/eth0.100/forwarding=1\n";
        let got: Vec<(String, String)> = parse(f, text).into_iter().map(|a| (a.key, a.value)).collect();
        assert_eq!(
            got,
            vec![
                ("net.ipv4.tcp_congestion_control".into(), "bbr".into()),
                ("net.core.default_qdisc".into(), "fq".into()),
                ("net.ipv4.x".into(), "1".into()),
                ("net.ipv4.conf.eth0/100.forwarding".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn etc_hides_usr_lib_and_names_sort() {
        let listings = vec![
            (PathBuf::from("/etc/sysctl.d"), vec!["90-ccbench.conf".to_string(), "50-a.conf".into(), "README".into()]),
            (PathBuf::from("/usr/lib/sysctl.d"), vec!["50-a.conf".to_string(), "99-z.conf".into(), "10-b.conf".into()]),
        ];
        let got = order(&listings);
        let want: Vec<PathBuf> = ["/usr/lib/sysctl.d/10-b.conf", "/etc/sysctl.d/50-a.conf", "/etc/sysctl.d/90-ccbench.conf", "/usr/lib/sysctl.d/99-z.conf"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn last_assignment_wins() {
        let mut all = parse(Path::new("/a.conf"), "net.ipv4.tcp_congestion_control = cubic\n");
        all.extend(parse(Path::new("/b.conf"), "net.ipv4.tcp_congestion_control = bbr\n"));
        let w = winner(&all, "net.ipv4.tcp_congestion_control").unwrap();
        assert_eq!((w.file.as_path(), w.value.as_str()), (Path::new("/b.conf"), "bbr"));
        assert!(winner(&all, "net.core.default_qdisc").is_none());
        assert_eq!(overridden(&all, Path::new("/a.conf")), vec![all[1].clone()]);
        assert!(overridden(&all, Path::new("/b.conf")).is_empty());
    }

    #[test]
    fn garbage_never_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for _ in 0..2000 {
            let len = rng.gen_range(0..200);
            let bytes: Vec<u8> = (0..len).map(|_| *[b'=', b'.', b'/', b'-', b'#', b'\n', b' ', b'a', 0xff].get(rng.gen_range(0..9)).unwrap_or(&b'x')).collect();
            for a in parse(Path::new("/g.conf"), &String::from_utf8_lossy(&bytes)) {
                assert!(!a.key.is_empty() && !a.key.contains('\n'));
            }
        }
    }
}
