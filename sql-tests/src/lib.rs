//! The sqllogictest runner for Sieve, embedded and over the MySQL protocol. Built with the engine.
