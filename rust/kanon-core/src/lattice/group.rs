//! Grouping rows into classes: packed keys summed in an open-addressing table, and a
//! seedless hasher for maps keyed by packed classes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::types::Class;
use std::ops::{BitAnd, BitOr};

/// Inputs of at least this many tuples or classes compute their keys in parallel.
pub(super) const PARALLEL_ITEMS: usize = 1 << 16;

/// [`sum_by_key`] over `item(0..n)`. Large inputs are cut into chunks: while this
/// thread sums one chunk, another computes the next (the two halves of the work
/// overlap; the order of the items, and so the result, stays the same). Parts are not
/// summed in parallel and merged: on nearly all-distinct tuples the merge repeats the work.
///
/// The sum stops once more than `cap` distinct keys have come: the second value says
/// whether it ran to the end (the classes are then complete).
pub(super) fn sum_items<K: PackedKey>(
    n: usize,
    item: impl Fn(usize) -> (K, u64) + Sync + Send,
    expected: usize,
    cap: usize,
    out: Vec<Class<K>>,
) -> (Vec<Class<K>>, bool) {
    // The sum stops at `cap + 1` keys: a smaller table (fewer cache misses) holds them.
    let expected = expected.min(cap.saturating_add(1));
    if n < PARALLEL_ITEMS {
        return sum_by_key(expected, out, |table| {
            (0..n).all(|i| {
                let (key, count) = item(i);
                table.add(key, count) <= cap
            })
        });
    }
    // Two chunk buffers, kept between calls (fresh memory costs a page fault per page).
    K::with_items(|buffer| {
        buffer.resize(2 * CHUNK, (K::EMPTY, 0));
        let (mut current, mut next) = buffer.split_at_mut(CHUNK);
        let fill = |chunk: &mut [(K, u64)], start: usize| {
            let end = (start + CHUNK).min(n);
            for (slot, i) in chunk.iter_mut().zip(start..end) {
                *slot = item(i);
            }
            end - start
        };
        sum_by_key(expected, out, |table| {
            let mut len = fill(current, 0);
            let mut start = len;
            while len > 0 {
                let (summed, ahead) = (&current[..len], &mut *next);
                let (complete, next_len) = rayon::join(
                    || {
                        summed
                            .iter()
                            .all(|&(key, count)| table.add(key, count) <= cap)
                    },
                    || if start < n { fill(ahead, start) } else { 0 },
                );
                if !complete {
                    return false;
                }
                std::mem::swap(&mut current, &mut next);
                len = next_len;
                start += len;
            }
            true
        })
    })
}

/// Items per chunk of [`sum_items`].
const CHUNK: usize = 1 << 16;

/// An open-addressing table summing counts by key (see [`sum_by_key`]).
struct Table<'t, K> {
    slots: &'t mut [(K, u64)],
    /// Slots in the order their keys first came.
    order: &'t mut Vec<u32>,
    shift: u32,
    mask: usize,
}

impl<K: PackedKey> Table<'_, K> {
    /// Add `count` to `key`'s sum; returns the number of distinct keys so far.
    #[inline]
    fn add(&mut self, key: K, count: u64) -> usize {
        let mut i = (key.fold().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        loop {
            let slot = &mut self.slots[i];
            if slot.0 == key {
                slot.1 += count;
                return self.order.len();
            }
            if slot.0 == K::EMPTY {
                *slot = (key, count);
                self.order.push(i as u32);
                return self.order.len();
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// Sum the counts of equal keys that `feed` adds into `out` (cleared first; passed in
/// so that its memory is reused), in the order keys first occur (deterministic), with
/// an open-addressing table sized for `expected` distinct keys, which must bound them
/// (the callers pass the number of items or of possible labels, whichever is smaller),
/// so the table is never more than 70 % full. `feed` returns whether it added every
/// item (returned beside the sums).
fn sum_by_key<K: PackedKey>(
    expected: usize,
    mut out: Vec<Class<K>>,
    feed: impl FnOnce(&mut Table<'_, K>) -> bool,
) -> (Vec<Class<K>>, bool) {
    let capacity = (expected.max(4) * 10 / 7 + 1).next_power_of_two();
    // The table and its order are kept between calls (all slots empty at rest): fresh
    // ones would be allocated, and their pages faulted in, for every node.
    K::with_table(|slots| {
        if slots.len() < capacity {
            slots.resize(capacity, (K::EMPTY, 0));
        }
        let mut order = ORDER.with(|order| std::mem::take(&mut *order.borrow_mut()));
        order.clear();
        let mut table = Table {
            slots: &mut slots[..capacity],
            order: &mut order,
            shift: 64 - capacity.trailing_zeros(),
            mask: capacity - 1,
        };
        let complete = feed(&mut table);
        out.clear();
        out.extend(table.order.iter().map(|&i| {
            let slot = &mut table.slots[i as usize];
            let class = *slot;
            slot.0 = K::EMPTY;
            class
        }));
        ORDER.with(|kept| *kept.borrow_mut() = order);
        (out, complete)
    })
}

thread_local! {
    /// [`sum_by_key`]'s tables: a key and its count per slot (the count is valid where
    /// the key is set), side by side so that a probe touches one cache line.
    static TABLE_64: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
    static TABLE_128: RefCell<Vec<(Wide, u64)>> = const { RefCell::new(Vec::new()) };
    /// [`sum_by_key`]'s order of first occurrence.
    static ORDER: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// [`sum_items`]'s two chunk buffers.
    static ITEMS_64: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
    static ITEMS_128: RefCell<Vec<(Wide, u64)>> = const { RefCell::new(Vec::new()) };
}

/// A packed class key: `u64` when the codes fit in 63 bits (classes of 16 bytes instead
/// of 24: less memory traffic and fewer page faults), else [`Wide`] (127 bits at most);
/// the all-ones value marks an empty slot of [`sum_by_key`]'s table.
pub(super) trait PackedKey:
    Copy + Eq + Send + Sync + Default + BitOr<Output = Self> + BitAnd<Output = Self> + 'static
{
    const EMPTY: Self;
    /// The bits from `shift` up (the caller masks them).
    fn field(self, shift: u32) -> u64;
    /// 64 bits to hash.
    fn fold(self) -> u64;
    /// The key as `u128`.
    fn wide(self) -> u128;
    /// A `u128` key that fits this type, as this type.
    fn narrow(key: u128) -> Self;
    /// `code` shifted into place (the key must have room for it).
    fn place(code: u32, shift: u32) -> Self;
    /// Run `f` on this thread's table of slots with keys of this type (all empty at
    /// rest).
    fn with_table<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R;
    /// Run `f` on this thread's buffer of items with keys of this type.
    fn with_items<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R;
}

impl PackedKey for u64 {
    const EMPTY: Self = u64::MAX;
    fn field(self, shift: u32) -> u64 {
        self >> shift
    }
    fn with_table<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R {
        TABLE_64.with(|table| f(&mut table.borrow_mut()))
    }
    fn with_items<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R {
        ITEMS_64.with(|items| f(&mut items.borrow_mut()))
    }
    fn fold(self) -> u64 {
        self
    }
    fn wide(self) -> u128 {
        u128::from(self)
    }
    fn narrow(key: u128) -> Self {
        key as u64
    }
    fn place(code: u32, shift: u32) -> Self {
        u64::from(code) << shift
    }
}

/// A 128-bit packed key as two 64-bit halves. Aligned to 8 bytes, a class of it and its
/// count takes 24 bytes instead of the 32 of a `u128` (aligned to 16): a quarter less
/// memory for the histogram, the tables and the cached classes of wide lattices.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub(super) struct Wide {
    lo: u64,
    hi: u64,
}

impl BitOr for Wide {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self {
            lo: self.lo | other.lo,
            hi: self.hi | other.hi,
        }
    }
}

impl BitAnd for Wide {
    type Output = Self;
    fn bitand(self, other: Self) -> Self {
        Self {
            lo: self.lo & other.lo,
            hi: self.hi & other.hi,
        }
    }
}

impl PackedKey for Wide {
    const EMPTY: Self = Self {
        lo: u64::MAX,
        hi: u64::MAX,
    };
    fn field(self, shift: u32) -> u64 {
        (self.wide() >> shift) as u64
    }
    fn with_table<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R {
        TABLE_128.with(|table| f(&mut table.borrow_mut()))
    }
    fn with_items<R>(f: impl FnOnce(&mut Vec<(Self, u64)>) -> R) -> R {
        ITEMS_128.with(|items| f(&mut items.borrow_mut()))
    }
    fn fold(self) -> u64 {
        self.lo ^ self.hi.rotate_left(29)
    }
    fn wide(self) -> u128 {
        u128::from(self.hi) << 64 | u128::from(self.lo)
    }
    fn narrow(key: u128) -> Self {
        Self {
            lo: key as u64,
            hi: (key >> 64) as u64,
        }
    }
    fn place(code: u32, shift: u32) -> Self {
        Self::narrow(u128::from(code) << shift)
    }
}

/// A fixed, seedless hasher for packed class keys (deterministic iteration order).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn write_u128(&mut self, v: u128) {
        let x = (v as u64) ^ ((v >> 64) as u64).rotate_left(29);
        let x = (x ^ (x >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        self.0 = x ^ (x >> 29);
    }
}

pub(crate) type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The sums in first-occurrence order, computed plainly.
    fn plain<K: PackedKey + std::hash::Hash>(items: &[(K, u64)]) -> Vec<(K, u64)> {
        let mut at: HashMap<K, usize> = HashMap::new();
        let mut out: Vec<(K, u64)> = Vec::new();
        for &(key, count) in items {
            match at.get(&key) {
                Some(&i) => out[i].1 += count,
                None => {
                    at.insert(key, out.len());
                    out.push((key, count));
                }
            }
        }
        out
    }

    fn check<K: PackedKey + std::hash::Hash + std::fmt::Debug>(key: impl Fn(u64) -> K) {
        // Small inputs (summed in one pass) and large ones (in chunks, one ahead computed
        // on another thread), with repeated keys far apart and a partial last chunk.
        for n in [10, PARALLEL_ITEMS - 1, 3 * CHUNK + 123] {
            let items: Vec<(K, u64)> = (0..n as u64)
                .map(|i| (key(i.wrapping_mul(2_654_435_761) % 50_000), i % 7 + 1))
                .collect();
            let (got, complete) = sum_items(n, |i| items[i], n, usize::MAX, Vec::new());
            assert!(complete);
            assert_eq!(got, plain(&items), "n = {n}");
            // A cap stops the sum after its first `cap + 1` distinct keys, and leaves the
            // table empty: the next run gives the same as the first.
            let distinct = got.len();
            let (part, complete) = sum_items(n, |i| items[i], n, distinct / 3, Vec::new());
            assert!(!complete && part.len() == distinct / 3 + 1, "n = {n}");
            let keys = |classes: &[(K, u64)]| classes.iter().map(|c| c.0).collect::<Vec<_>>();
            assert_eq!(keys(&part), keys(&got[..part.len()]));
            let (all, complete) = sum_items(n, |i| items[i], n, distinct, Vec::new());
            assert!(complete);
            assert_eq!(all, got);
        }
    }

    #[test]
    fn sums_by_key_in_first_occurrence_order() {
        check(|x| x);
        check(|x| Wide::narrow(u128::from(x) << 64 | u128::from(x)));
    }

    #[test]
    fn wide_keys_pack_as_u128_in_24_byte_classes() {
        assert_eq!(std::mem::size_of::<(Wide, u64)>(), 24);
        for key in [0, 1, u128::from(u64::MAX), u128::MAX - 1, 0xdead_beef << 70] {
            let wide = Wide::narrow(key);
            assert_eq!(wide.wide(), key);
            for shift in [0, 13, 64, 100] {
                assert_eq!(wide.field(shift), (key >> shift) as u64);
            }
            assert_eq!((wide | Wide::narrow(1 << 99)).wide(), key | 1 << 99);
            assert_eq!(
                (wide & Wide::narrow(u128::from(u64::MAX))).wide(),
                key & u128::from(u64::MAX)
            );
        }
        assert_eq!(Wide::place(5, 90).wide(), 5 << 90);
    }
}
