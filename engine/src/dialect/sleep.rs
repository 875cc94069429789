//! MySQL's `SLEEP(seconds)`: holds a statement open (tools and tests use it to see a statement in
//! the process list, or to test timeouts and KILL). An async function, so a sleeping statement
//! holds no thread, and dropping the statement (KILL QUERY, `max_execution_time`, a client that
//! left) ends the sleep with it. Returns 0 per row, after sleeping once per row, as MySQL does.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::async_udf::{AsyncScalarUDF, AsyncScalarUDFImpl};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

#[derive(Debug, PartialEq, Eq, Hash)]
struct Sleep {
    signature: Signature,
}

impl ScalarUDFImpl for Sleep {
    fn name(&self) -> &str {
        "sleep"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        unreachable!("an async function is invoked through invoke_async_with_args")
    }
}

#[async_trait::async_trait]
impl AsyncScalarUDFImpl for Sleep {
    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let seconds = cast(&args.args[0].to_array(rows)?, &DataType::Float64)?;
        let seconds = seconds.as_primitive::<Float64Type>();
        for i in 0..rows {
            let s = seconds.value(i);
            let duration = (!seconds.is_null(i))
                .then(|| Duration::try_from_secs_f64(s).ok())
                .flatten();
            let Some(duration) = duration else {
                let shown = if seconds.is_null(i) {
                    "NULL".to_string()
                } else {
                    s.to_string()
                };
                return plan_err!("Incorrect arguments to sleep: {shown}");
            };
            tokio::time::sleep(duration).await;
        }
        Ok(ColumnarValue::Array(Arc::new(Int64Array::from(vec![
            0;
            rows
        ]))))
    }
}

pub fn register(ctx: &SessionContext) {
    let sleep = Sleep {
        signature: Signature::any(1, Volatility::Volatile),
    };
    ctx.register_udf(AsyncScalarUDF::new(Arc::new(sleep)).into_scalar_udf());
}
