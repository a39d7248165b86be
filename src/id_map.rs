//! Tables keyed by ids the library hands out itself (request ids, completion keys).
//!
//! They are small integers given out in order, so a multiply spreads them over the buckets at
//! a fraction of SipHash's cost (a call looks its id up in several tables). A server can only
//! look ids up, never add one: nothing to flood.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
pub(crate) struct IdHasher(u64);

/// Fibonacci hashing: the golden ratio's odd 64-bit multiplier.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(GOLDEN);
    }

    fn write_i64(&mut self, id: i64) {
        self.write_u64(id as u64);
    }

    /// Only integer keys reach this hasher; any other bytes still hash, just slower.
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(GOLDEN);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids in order (the usual case), far apart, negative and at the extremes (a server's
    /// answer can name any id) all find their own entry, and only it.
    #[test]
    fn the_id_table_keeps_every_id_apart() {
        let mut map: IdMap<i64, i64> = IdMap::default();
        let ids: Vec<i64> = (1..=5_000)
            .chain([0, -1, i64::MIN, i64::MAX, 1 << 40, (1 << 40) + 1])
            .collect();
        for &id in &ids {
            map.insert(id, id.wrapping_mul(3));
        }
        assert_eq!(map.len(), ids.len());
        for &id in &ids {
            assert_eq!(map.get(&id), Some(&id.wrapping_mul(3)), "{id}");
        }
        assert_eq!(map.get(&5_001), None);
        for &id in &ids {
            map.remove(&id);
        }
        assert!(map.is_empty());
    }
}
