// Test-only: echoes the round and reports facts `n` entries and `e` events
// (and stable when fact `stable` is 1),
// as plugins/test/sdk-probe's healthProbe does for the AssemblyScript SDK.
use probegate_sdk::health::{Health, Round};
use probegate_sdk::{Input, Manifest, Verdict};

fn manifest() -> Manifest {
    Manifest::new("health-probe-rust", "1.0.0", "test-only health output").source("lctl.imports").probe("storage")
}

fn check(input: &Input, round: Round) -> Health {
    let n: usize = input.fact("n").and_then(|s| s.parse().ok()).unwrap_or(0);
    let e: i64 = input.fact("e").and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut h = Health::new(Verdict::warn("Probe", format!("{}/{}", round.epoch, round.previous_epoch)));
    for i in 0..n {
        h = h.entry(input.fact("status").unwrap_or(""), &format!("Reason{}", i), format!("{}{}", input.fact("msg").unwrap_or(""), i), input.fact("fs"));
    }
    for i in 0..e {
        h = h.event("Evicted", Some(&format!("fs{}", i)), Some(&format!("fs-OST{}", i)), if i == 0 { None } else { Some(i) });
    }
    if input.fact("stable") == Some("1") {
        h = h.stable();
    }
    h
}

probegate_sdk::export_health_plugin!(manifest, check);
