//! Sieve's query engine over DataFusion: table provider with block pruning, write sink, table
//! functions and catalog. Built in the storage/engine issue; depends only on `sieve-storage`.
