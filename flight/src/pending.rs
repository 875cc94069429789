//! What a client asked for and has not fetched yet: the results of statements GetFlightInfo ran
//! (so their schema is known) waiting for the DoGet that streams them, and prepared statements
//! with their bound parameters. Each belongs to the token that made it. Bounded: past
//! [`MAX_PENDING`] the oldest is dropped (a dropped result's statement is cancelled).

use std::collections::VecDeque;
use std::sync::Mutex;

pub const MAX_PENDING: usize = 256;

pub struct Pending<T> {
    entries: Mutex<VecDeque<(u64, String, T)>>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self {
            entries: Mutex::default(),
        }
    }
}

impl<T> Pending<T> {
    /// Keeps `value` for `token`; its handle.
    pub fn put(&self, token: &str, value: T) -> u64 {
        let handle = rand::random::<u64>();
        let mut entries = self.entries.lock().expect("pending lock");
        if entries.len() == MAX_PENDING {
            entries.pop_front();
        }
        entries.push_back((handle, token.to_string(), value));
        handle
    }

    /// Takes the value of `handle`, if `token` made it.
    pub fn take(&self, token: &str, handle: u64) -> Option<T> {
        let mut entries = self.entries.lock().expect("pending lock");
        let at = entries
            .iter()
            .position(|(h, t, _)| *h == handle && t == token)?;
        entries.remove(at).map(|(_, _, v)| v)
    }

    /// Replaces the value of `handle`, if `token` made it; whether it did.
    pub fn replace(&self, token: &str, handle: u64, value: T) -> bool {
        let mut entries = self.entries.lock().expect("pending lock");
        match entries
            .iter_mut()
            .find(|(h, t, _)| *h == handle && t == token)
        {
            Some(entry) => {
                entry.2 = value;
                true
            }
            None => false,
        }
    }
}

impl<T: Clone> Pending<T> {
    /// A copy of the value of `handle`, left in place.
    pub fn get(&self, token: &str, handle: u64) -> Option<T> {
        let entries = self.entries.lock().expect("pending lock");
        entries
            .iter()
            .find(|(h, t, _)| *h == handle && t == token)
            .map(|(_, _, v)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_belong_to_their_token_and_the_oldest_goes_first() {
        let pending = Pending::default();
        let first = pending.put("a", 1);
        assert_eq!(pending.take("b", first), None, "another token's");
        for i in 0..MAX_PENDING {
            pending.put("a", i + 2);
        }
        assert_eq!(pending.take("a", first), None, "dropped: the oldest");
        let last = pending.put("a", 99);
        assert!(pending.replace("a", last, 100));
        assert_eq!(pending.get("a", last), Some(100));
        assert_eq!(pending.take("a", last), Some(100));
        assert_eq!(pending.take("a", last), None, "taken once");
    }
}
