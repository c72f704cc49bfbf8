//! Resident-memory checks (Linux /proc): untouched blobs cost nothing and
//! operations write straight into their output without hidden full copies.
//! One test function, so nothing else in this binary allocates meanwhile.

use blobcore::{Blob, DType, Engine};

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rss() -> u64 {
    status_kib("VmRSS:").unwrap_or(0) * 1024
}

/// Resets the peak-RSS counter (Linux >= 4.0); false where unsupported.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn peak() -> u64 {
    status_kib("VmHWM:").unwrap_or(0) * 1024
}

const MIB: u64 = 1 << 20;

#[test]
fn resident_memory() {
    if status_kib("VmRSS:").is_none() {
        eprintln!("SKIP: /proc/self/status not available; resident-memory checks not run");
        return;
    }
    let e = Engine::cpu();

    // A 1 GiB blob that is created and never touched costs no resident memory.
    let before = rss();
    let big = Blob::tensor(&e, DType::F32, &[256, 1024, 1024]).unwrap();
    assert_eq!(big.byte_size(), 1 << 30);
    assert!(rss() < before + 8 * MIB, "untouched 1 GiB blob is resident");
    // Reading one element maps just a page, not the whole GiB.
    let s = big.slice(&[7, 3]).unwrap();
    assert_eq!(s.asum().unwrap(), 0.0);
    assert!(rss() < before + 16 * MIB, "one read made the whole blob resident");
    drop((s, big));

    // merge / split / transposed write straight into the output: the peak
    // grows by the output's size, not by a second temporary copy.
    let a = Blob::tensor(&e, DType::F32, &[8, 1024, 1024]).unwrap(); // 32 MiB
    let b = Blob::tensor(&e, DType::F32, &[8, 1024, 1024]).unwrap();
    a.fill(1.0).unwrap();
    b.fill(2.0).unwrap();
    let out = 64 * MIB;
    let check = |what: &str, f: &dyn Fn() -> Vec<Blob>| {
        if !reset_peak() {
            eprintln!("SKIP: peak RSS cannot be reset here; {what} not checked");
            return;
        }
        let base = rss();
        let kept = f();
        let grew = peak().saturating_sub(base);
        assert!(grew < out + out / 4, "{what}: peak grew by {} MiB for a {} MiB output", grew / MIB, out / MIB);
        drop(kept);
    };
    check("merge", &|| vec![Blob::merged(&[&a, &b], 2).unwrap()]);
    let m = Blob::merged(&[&a, &b], 0).unwrap();
    check("split", &|| m.split_equal(1, 2).unwrap());
    check("transposed", &|| vec![m.transposed(0, 2).unwrap()]);
    check("copy", &|| vec![m.copy().unwrap()]);
}
