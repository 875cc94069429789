//! MySQL functions DataFusion does not have, which drivers' metadata queries and applications
//! call: `UNIX_TIMESTAMP()` (seconds since 1970 now) and `UNIX_TIMESTAMP(t)` (of a timestamp,
//! date or its text, read as UTC, Sieve's one time zone); `LOCATE(substr, str[, pos])` (where
//! `substr` starts in `str`, from 1; 0 if it does not); `LCASE` and `UCASE`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::execution::context::SessionContext;
use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

#[derive(Debug, PartialEq, Eq, Hash)]
struct UnixTimestamp {
    signature: Signature,
}

impl ScalarUDFImpl for UnixTimestamp {
    fn name(&self) -> &str {
        "unix_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(arg) = args.args.into_iter().next() else {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            return Ok(ColumnarValue::Scalar(ScalarValue::Int64(Some(now))));
        };
        let array = arg.into_array(args.number_rows)?;
        let seconds = cast(&array, &DataType::Timestamp(TimeUnit::Second, None))?;
        let seconds = cast(&seconds, &DataType::Int64)?;
        Ok(ColumnarValue::Array(Arc::new(seconds)))
    }
}

fn unix_timestamp() -> ScalarUDF {
    ScalarUDF::new_from_impl(UnixTimestamp {
        signature: Signature::one_of(
            vec![TypeSignature::Nullary, TypeSignature::Any(1)],
            Volatility::Volatile,
        ),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Locate {
    signature: Signature,
}

impl ScalarUDFImpl for Locate {
    fn name(&self) -> &str {
        "locate"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args
            .args
            .into_iter()
            .map(|a| a.into_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let needles = cast(&arrays[0], &DataType::Utf8)?;
        let haystacks = cast(&arrays[1], &DataType::Utf8)?;
        let starts = arrays
            .get(2)
            .map(|a| cast(a, &DataType::Int64))
            .transpose()?;
        let (needles, haystacks) = (needles.as_string::<i32>(), haystacks.as_string::<i32>());
        let starts = starts
            .as_ref()
            .map(|a| a.as_primitive::<datafusion::arrow::datatypes::Int64Type>());
        let found: Int64Array = (0..rows)
            .map(|i| {
                if needles.is_null(i)
                    || haystacks.is_null(i)
                    || starts.is_some_and(|s| s.is_null(i))
                {
                    return None;
                }
                let from = starts.map_or(1, |s| s.value(i));
                Some(locate(needles.value(i), haystacks.value(i), from))
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(found)))
    }
}

/// MySQL's LOCATE, in characters: `needle`'s first position in `haystack` at or after `from`.
fn locate(needle: &str, haystack: &str, from: i64) -> i64 {
    let Ok(skip) = usize::try_from(from - 1) else {
        return 0;
    };
    let Some((offset, _)) = haystack
        .char_indices()
        .nth(skip)
        .or((skip == haystack.chars().count()).then_some((haystack.len(), ' ')))
    else {
        return 0;
    };
    haystack[offset..].find(needle).map_or(0, |at| {
        (skip + haystack[offset..offset + at].chars().count() + 1) as i64
    })
}

/// Registers the functions with a session.
/// The MySQL functions DataFusion lacks, as a session and a worker register them.
pub fn functions() -> Vec<ScalarUDF> {
    let lower = datafusion::functions::string::lower();
    let upper = datafusion::functions::string::upper();
    vec![
        unix_timestamp(),
        ScalarUDF::new_from_impl(Locate {
            signature: Signature::one_of(
                vec![TypeSignature::Any(2), TypeSignature::Any(3)],
                Volatility::Immutable,
            ),
        }),
        lower.as_ref().clone().with_aliases(["lcase"]),
        upper.as_ref().clone().with_aliases(["ucase"]),
    ]
}

pub fn register(ctx: &SessionContext) {
    for udf in functions() {
        ctx.register_udf(udf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_counts_characters_from_one() {
        assert_eq!(locate("UNSIGNED", "BIGINT UNSIGNED", 1), 8);
        assert_eq!(locate("(1)", "tinyint(1)", 1), 8);
        assert_eq!(locate("x", "abc", 1), 0);
        assert_eq!(locate("b", "ébcb", 3), 4);
        assert_eq!(locate("", "abc", 1), 1);
        assert_eq!(locate("a", "abc", 0), 0);
        assert_eq!(locate("a", "abc", 9), 0);
    }
}
