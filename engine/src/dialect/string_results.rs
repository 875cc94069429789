//! MySQL's bound on the strings a function builds: a result longer than `max_allowed_packet` is
//! NULL (MySQL adds warning 1301; Sieve has no warnings yet). Functions that build a string
//! out of a few bytes of input ran outside every memory budget: `repeat('x', 1500000000)` took
//! the server to 5.8 GiB for one query, whatever its per-query budget, since a value is built
//! before any operator can reserve memory for it. So the functions whose result can be
//! larger than their arguments (repeat, lpad, rpad, concat, concat_ws, replace) are wrapped:
//! each row's result size is bounded from its arguments first, and rows over the bound are
//! NULL without being built.
//!
//! A batch of rows under the bound can still be large: 8192 rows of `repeat(s, 100000)` are
//! gigabytes, and `count(distinct repeat(cast(number as varchar), 100000))` took the server to
//! 15.9 GB over a 1 GiB query budget. So a batch's results are sized before they are built and
//! reserved in the statement's memory pool for as long as they are built: a batch the budget
//! has no room for fails with the pool's error (MySQL's 1041), building nothing.
//!
//! `regexp_replace`'s result cannot be sized from its arguments: it depends on how often the
//! pattern matches, and a replacement may repeat what a group matched. Sizing it by the worst
//! case (every character a match) would refuse ordinary statements, so it is built a slice of
//! rows at a time (512 rows, or a megabyte of input), and each slice's result is reserved as it
//! is built: a batch over the budget fails one slice past it, not after building the whole
//! batch (3.3 GB for one 1 GiB query before), and rows over `max_allowed_packet` are NULL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::kernels::length::length;
use datafusion::arrow::compute::{cast, concat, nullif};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// How large a function's result can be per row, in bytes, from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Bound {
    /// `repeat(s, n)`: `s` n times.
    Repeat,
    /// `lpad(s, n[, pad])`, `rpad`: n characters, at most 4 bytes each.
    Pad,
    /// `concat(a, …)`: the arguments' lengths.
    Concat,
    /// `concat_ws(sep, a, …)`: the arguments' lengths and a separator between each two.
    ConcatWs,
    /// `replace(s, from, to)`: `to` for every `from` that fits in `s`.
    Replace,
    /// `regexp_replace(s, pattern, to[, flags])`: not sized from its arguments (it depends on
    /// the matches); built a slice of rows at a time instead.
    Unsized,
}

/// Bytes a non-string argument takes as text, at most (a number, a date).
const NON_STRING_TEXT: i64 = 64;

impl Bound {
    /// Per row, the result's size in bytes at most (saturating).
    fn sizes(self, args: &[ArrayRef], rows: usize) -> Result<Vec<i64>> {
        let lengths = args
            .iter()
            .map(|a| byte_lengths(a, rows))
            .collect::<Result<Vec<_>>>()?;
        let count = |i: usize| -> Result<Vec<i64>> {
            let n = cast(&args[i], &DataType::Int64)?;
            let n = n.as_primitive::<Int64Type>();
            Ok((0..rows)
                .map(|r| if n.is_null(r) { 0 } else { n.value(r).max(0) })
                .collect())
        };
        Ok(match self {
            Bound::Repeat => {
                let n = count(1)?;
                (0..rows)
                    .map(|r| lengths[0][r].saturating_mul(n[r]))
                    .collect()
            }
            Bound::Pad => count(1)?.into_iter().map(|n| n.saturating_mul(4)).collect(),
            Bound::Concat => (0..rows)
                .map(|r| lengths.iter().map(|l| l[r]).fold(0, i64::saturating_add))
                .collect(),
            Bound::ConcatWs => (0..rows)
                .map(|r| {
                    let separators = lengths[0][r].saturating_mul(args.len() as i64);
                    lengths[1..]
                        .iter()
                        .map(|l| l[r])
                        .fold(separators, i64::saturating_add)
                })
                .collect(),
            Bound::Replace => (0..rows)
                .map(|r| {
                    let (s, from, to) = (lengths[0][r], lengths[1][r], lengths[2][r]);
                    let matches = if from == 0 { 0 } else { s / from };
                    s.saturating_add(matches.saturating_mul(to))
                })
                .collect(),
            Bound::Unsized => unreachable!("an unsized function is built by slices"),
        })
    }
}

/// Each row's byte length as text: exact for strings, [`NON_STRING_TEXT`] for other values,
/// 0 for NULL.
fn byte_lengths(array: &ArrayRef, rows: usize) -> Result<Vec<i64>> {
    let is_string = matches!(
        array.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Binary
    );
    if !is_string {
        return Ok((0..rows)
            .map(|r| if array.is_null(r) { 0 } else { NON_STRING_TEXT })
            .collect());
    }
    let lengths = cast(&length(array)?, &DataType::Int64)?;
    let lengths = lengths.as_primitive::<Int64Type>();
    Ok((0..rows)
        .map(|r| {
            if lengths.is_null(r) {
                0
            } else {
                lengths.value(r)
            }
        })
        .collect())
}

/// Batches whose results would take fewer bytes than this are built without a reservation.
const UNRESERVED_BATCH_BYTES: i64 = 1 << 20;

/// A built-in string function whose rows over `cap` bytes are NULL (never built, unless the
/// function is [`Bound::Unsized`]), and whose batches are built within `pool`'s budget.
#[derive(Debug)]
struct Capped {
    inner: Arc<ScalarUDF>,
    bound: Bound,
    cap: i64,
    pool: Arc<dyn MemoryPool>,
}

impl PartialEq for Capped {
    fn eq(&self, other: &Self) -> bool {
        (&self.inner, self.bound, self.cap) == (&other.inner, other.bound, other.cap)
            && Arc::ptr_eq(&self.pool, &other.pool)
    }
}

impl Eq for Capped {}

impl std::hash::Hash for Capped {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.inner, self.bound, self.cap).hash(state)
    }
}

impl ScalarUDFImpl for Capped {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = self.inner.return_field_from_args(args)?;
        Ok(Arc::new(field.as_ref().clone().with_nullable(true)))
    }

    // Not the inner function's `simplify`: concat's rebuilds itself from the uncapped built-in.

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.bound == Bound::Unsized {
            return self.invoke_sliced(args);
        }
        let rows = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let sizes = self.bound.sizes(&arrays, rows)?;
        let built = sizes
            .iter()
            .filter(|&&size| size <= self.cap)
            .fold(0i64, |a, b| a.saturating_add(*b));
        let reservation = MemoryConsumer::new(self.name()).register(&self.pool);
        if built > UNRESERVED_BATCH_BYTES {
            reservation.try_grow(usize::try_from(built).unwrap_or(usize::MAX))?;
        }
        let over: BooleanArray = sizes
            .into_iter()
            .map(|size| Some(size > self.cap))
            .collect();
        if over.true_count() == 0 {
            return self.inner.invoke_with_args(args);
        }
        // The rows over the bound get NULL arguments, so nothing is built for them, and a NULL
        // result (concat skips NULL arguments, where MySQL's is NULL).
        let nulled = arrays
            .iter()
            .map(|a| nullif(a, &over).map(ColumnarValue::Array))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let result = self
            .inner
            .invoke_with_args(ScalarFunctionArgs {
                args: nulled,
                ..args
            })?
            .to_array(rows)?;
        Ok(ColumnarValue::Array(nullif(&result, &over)?))
    }
}

/// Rows of a [`Bound::Unsized`] function are built together while they are at most this many and
/// their first argument takes at most this many bytes (a row over it is built alone).
const SLICE_ROWS: usize = 512;
const SLICE_INPUT_BYTES: i64 = 1 << 20;

impl Capped {
    /// Builds an [`Bound::Unsized`] function's batch a slice of rows at a time, each slice's
    /// result reserved in the pool as it is built.
    fn invoke_sliced(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let input = args.args[0].to_array(rows)?;
        let lengths = byte_lengths(&input, rows)?;
        let reservation = MemoryConsumer::new(self.name()).register(&self.pool);
        let mut parts = Vec::new();
        let mut start = 0;
        while start < rows {
            let mut end = start + 1;
            let mut bytes = lengths[start];
            while end < rows
                && end - start < SLICE_ROWS
                && bytes.saturating_add(lengths[end]) <= SLICE_INPUT_BYTES
            {
                bytes += lengths[end];
                end += 1;
            }
            // Constant arguments stay constant: a pattern is compiled once a slice.
            let sliced = (args.args.iter())
                .map(|a| match a {
                    ColumnarValue::Array(array) => {
                        ColumnarValue::Array(array.slice(start, end - start))
                    }
                    scalar => scalar.clone(),
                })
                .collect();
            let part = (self.inner.invoke_with_args(ScalarFunctionArgs {
                args: sliced,
                arg_fields: args.arg_fields.clone(),
                number_rows: end - start,
                return_field: args.return_field.clone(),
                config_options: args.config_options.clone(),
            })?)
            .to_array(end - start)?;
            reservation.try_grow(part.get_array_memory_size())?;
            parts.push(part);
            start = end;
        }
        let built = match parts.len() {
            0 => return self.inner.invoke_with_args(args),
            1 => parts.pop().expect("one part"),
            _ => {
                reservation.try_grow(reservation.size())?;
                let parts: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
                concat(&parts)?
            }
        };
        let over: BooleanArray = byte_lengths(&built, rows)?
            .into_iter()
            .map(|size| Some(size > self.cap))
            .collect();
        if over.true_count() == 0 {
            return Ok(ColumnarValue::Array(built));
        }
        Ok(ColumnarValue::Array(nullif(&built, &over)?))
    }
}

/// Registers the bounded functions in place of the built-ins, bounded by `max_allowed_packet`
/// per row and by the session's memory pool per batch.
pub(crate) fn register(ctx: &SessionContext, max_allowed_packet: u64) {
    let pool = ctx.runtime_env().memory_pool.clone();
    let cap = i64::try_from(max_allowed_packet).unwrap_or(i64::MAX);
    use datafusion::functions::{regex, string, unicode};
    for (inner, bound) in [
        (string::repeat(), Bound::Repeat),
        (unicode::lpad(), Bound::Pad),
        (unicode::rpad(), Bound::Pad),
        (string::concat(), Bound::Concat),
        (string::concat_ws(), Bound::ConcatWs),
        (string::replace(), Bound::Replace),
        (regex::regexp_replace(), Bound::Unsized),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(Capped {
            inner,
            bound,
            cap,
            pool: pool.clone(),
        }));
    }
}
