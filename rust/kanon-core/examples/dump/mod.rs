//! Histograms dumped to files, read by the profiling examples (`lattice_file`,
//! `forest_file`): `PREFIX.tuples` (little-endian u32, m per tuple), `PREFIX.counts`
//! (u64) and `PREFIX.hier` (per attribute, one line of label codes per level, a blank
//! line after each attribute).

use kanon_core::Hierarchy;

/// The dumped histogram.
pub(crate) struct Dump {
    pub(crate) tuples: Vec<u32>,
    pub(crate) counts: Vec<u64>,
    pub(crate) hierarchies: Vec<Hierarchy>,
}

/// Read `PREFIX.tuples`, `PREFIX.counts` and `PREFIX.hier`.
pub(crate) fn read(prefix: &str) -> Dump {
    let raw = std::fs::read(format!("{prefix}.tuples")).expect("tuples");
    let tuples = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let raw = std::fs::read(format!("{prefix}.counts")).expect("counts");
    let counts = raw
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let hier = std::fs::read_to_string(format!("{prefix}.hier")).expect("hier");
    let hierarchies = blocks::<u32>(&hier)
        .iter()
        .map(|h| {
            let views: Vec<&[u32]> = h.iter().map(Vec::as_slice).collect();
            Hierarchy::try_from_levels(&views).expect("hierarchy")
        })
        .collect();
    Dump {
        tuples,
        counts,
        hierarchies,
    }
}

/// The whitespace-separated numbers of one line.
pub(crate) fn numbers<T: std::str::FromStr>(line: &str) -> Vec<T> {
    line.split_whitespace()
        .map(|x| x.parse().ok().expect("number"))
        .collect()
}

/// Blocks of lines of numbers, blocks separated by blank lines.
pub(crate) fn blocks<T: std::str::FromStr>(text: &str) -> Vec<Vec<Vec<T>>> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| b.lines().map(numbers).collect())
        .collect()
}

/// The value of `--name=VALUE` among `args`.
pub(crate) fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_owned))
}
