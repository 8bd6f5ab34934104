//! The privacy models of the search: their input (sensitive entries, population paths),
//! its validation, and which classes of a node fail k or a model.

use super::group::KeyMap;
use super::group::PackedKey;
use super::input::{ModelInput, Verdict, NO_LABEL};
use super::search::Search;
use super::types::{Class, KERNEL};
use crate::error::{KernelError, Result};
use crate::models::{merge_sorted, ModelCheck};

impl<'a> Search<'a> {
    /// Validate and index the models' data: sensitive entries by tuple, the table-wide
    /// sensitive distribution, population paths (and that the table is part of it).
    pub(super) fn load_models(&mut self, input: &ModelInput<'a>) -> Result<()> {
        let models = &input.models;
        if models.is_empty() {
            return Ok(());
        }
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: KERNEL,
            message,
        };
        let n = self.counts.len();
        let mut global = Vec::new();
        if models.need_sensitive() {
            let e = input.sensitive_tuples.len();
            for (name, len) in [
                ("sensitive_codes", input.sensitive_codes.len()),
                ("sensitive_counts", input.sensitive_counts.len()),
            ] {
                if len != e {
                    return Err(KernelError::LengthMismatch {
                        kernel: KERNEL,
                        argument: name,
                        got: len,
                        expected: e,
                    });
                }
            }
            global = vec![0u64; input.sensitive_values];
            let mut per_tuple = vec![0u64; n];
            let mut start = vec![0usize; n + 1];
            for ((&t, &code), &c) in input
                .sensitive_tuples
                .iter()
                .zip(input.sensitive_codes)
                .zip(input.sensitive_counts)
            {
                if t as usize >= n || code as usize >= global.len() {
                    return Err(invalid(format!(
                        "sensitive entry (tuple {t}, code {code}) is outside the {n} tuples or \
                         the {} sensitive values",
                        global.len()
                    )));
                }
                per_tuple[t as usize] += c;
                global[code as usize] += c;
                start[t as usize + 1] += 1;
            }
            if let Some(t) = (0..n).find(|&t| per_tuple[t] != self.counts[t]) {
                return Err(invalid(format!(
                    "the sensitive entries of tuple {t} hold {} rows, its count is {}",
                    per_tuple[t], self.counts[t]
                )));
            }
            for t in 0..n {
                start[t + 1] += start[t];
            }
            let mut entries = vec![(0u32, 0u64); e];
            let mut next = start.clone();
            for ((&t, &code), &c) in input
                .sensitive_tuples
                .iter()
                .zip(input.sensitive_codes)
                .zip(input.sensitive_counts)
            {
                entries[next[t as usize]] = (code, c);
                next[t as usize] += 1;
            }
            self.entry_start = start;
            self.entries = entries;
        }
        if models.need_population() {
            self.load_population(input)?;
        }
        self.check = Some(ModelCheck::new(KERNEL, models, &global)?);
        Ok(())
    }

    /// Check the population paths and that every table row has a population match.
    fn load_population(&mut self, input: &ModelInput<'a>) -> Result<()> {
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: KERNEL,
            message,
        };
        let mut offset = 0;
        for h in self.hierarchies {
            self.path_offset.push(offset);
            offset += h.height() + 1;
        }
        self.path_len = offset;
        let rows = input.population_counts.len();
        if input.population_paths.len() != rows * offset {
            return Err(KernelError::LengthMismatch {
                kernel: KERNEL,
                argument: "population_paths",
                got: input.population_paths.len(),
                expected: rows * offset,
            });
        }
        let mut leaf_rows: KeyMap<u64> = KeyMap::default();
        for (r, (path, &c)) in input
            .population_paths
            .chunks_exact(offset)
            .zip(input.population_counts)
            .enumerate()
        {
            for (j, h) in self.hierarchies.iter().enumerate() {
                for l in 0..=h.height() {
                    let code = path[self.path_offset[j] + l];
                    if code != NO_LABEL && code >= h.width(l) {
                        return Err(invalid(format!(
                            "population row {r} has code {code} at level {l} of attribute {j}, \
                             which has {} labels there",
                            h.width(l)
                        )));
                    }
                }
            }
            self.population_rows += c;
            if let Some(key) = self.path_key(path, &vec![0; self.m]) {
                *leaf_rows.entry(key).or_insert(0) += c;
            }
        }
        let mut table_rows: KeyMap<u64> = KeyMap::default();
        let leaves = vec![0; self.m];
        for (t, &c) in self.counts.iter().enumerate() {
            *table_rows.entry(self.key(t, &leaves)).or_insert(0) += c;
        }
        let missing: u64 = table_rows
            .iter()
            .map(|(key, &c)| c.saturating_sub(leaf_rows.get(key).copied().unwrap_or(0)))
            .sum();
        if missing > 0 {
            return Err(invalid(format!(
                "{missing} rows of the table have no matching row in the population \
                 (δ-presence needs the table to be a subset of the population)"
            )));
        }
        Ok(())
    }

    /// The packed key of a population path at `levels` (None if a label is absent from
    /// the table).
    pub(super) fn path_key(&self, path: &[u32], levels: &[u32]) -> Option<u128> {
        let mut key = 0u128;
        for (j, &l) in levels.iter().enumerate() {
            let code = path[self.path_offset[j] + l as usize];
            if code == NO_LABEL {
                return None;
            }
            key |= u128::from(code) << self.shift[j];
        }
        Some(key)
    }

    /// Which classes fail k or a model, their rows and whether they satisfy k and the
    /// models together as the class of `*`.
    pub(super) fn verdict<K: PackedKey>(&self, levels: &[u32], classes: &[Class<K>]) -> Verdict {
        let k = self.options.k;
        let Some(check) = &self.check else {
            let fails: Vec<bool> = classes.iter().map(|&(_, size)| size < k).collect();
            let suppressed = self.small_rows(classes);
            return Verdict {
                fails,
                suppressed,
                star_ok: suppressed >= k,
            };
        };
        let index: KeyMap<usize> = classes
            .iter()
            .enumerate()
            .map(|(c, &(key, _))| (key.wide(), c))
            .collect();
        let class_of = |key: u128| index.get(&key).copied();
        let mut histograms: Vec<Vec<(u32, u64)>> = vec![Vec::new(); classes.len()];
        if !self.entries.is_empty() {
            for t in 0..self.counts.len() {
                if let Some(c) = class_of(self.key(t, levels)) {
                    let entries = &self.entries[self.entry_start[t]..self.entry_start[t + 1]];
                    histograms[c].extend_from_slice(entries);
                }
            }
            for h in &mut histograms {
                merge_sorted(h);
            }
        }
        let mut population = vec![0u64; classes.len()];
        if self.path_len > 0 {
            for (path, &n) in self
                .population
                .chunks_exact(self.path_len)
                .zip(self.population_counts)
            {
                if let Some(c) = self.path_key(path, levels).and_then(class_of) {
                    population[c] += n;
                }
            }
        }
        let fails: Vec<bool> = classes
            .iter()
            .enumerate()
            .map(|(c, &(_, size))| size < k || !check.class_ok(&histograms[c], size, population[c]))
            .collect();
        let suppressed: u64 = classes
            .iter()
            .zip(&fails)
            .filter(|(_, &f)| f)
            .map(|(&(_, size), _)| size)
            .sum();
        let star_ok = suppressed >= k && {
            let mut star: Vec<(u32, u64)> = histograms
                .iter()
                .zip(&fails)
                .filter(|(_, &f)| f)
                .flat_map(|(h, _)| h.iter().copied())
                .collect();
            merge_sorted(&mut star);
            check.class_ok(&star, suppressed, self.population_rows)
        };
        Verdict {
            fails,
            suppressed,
            star_ok,
        }
    }
}
