-- The request headers each attempt sent (content type, user agent, the
-- signatures and the trace context), kept with the attempt so that the
-- console shows what the receiver got. They cannot be recomputed later: a
-- signature covers the attempt's time and the secrets valid then, and a
-- rotation drops the previous secret. A signature is an HMAC and reveals
-- no secret; the secret itself is never a header. NULL for attempts made
-- before this column existed, and for deliveries dropped without a request.

-- +goose Up
ALTER TABLE delivery_attempts ADD COLUMN request_headers text;

-- +goose Down
ALTER TABLE delivery_attempts DROP COLUMN request_headers;
