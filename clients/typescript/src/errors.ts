// Typed errors: every failed call surfaces as a RuntimeError (a ConnectError
// subclass, so code written for Connect keeps working) carrying the gRPC
// code, the ErrorInfo reason and metadata, the BadRequest field violations,
// the PreconditionFailure violations, the ResourceInfo and the RetryInfo
// delay, decoded from grpc-status-details-bin (gRPC), the gRPC-Web trailer or
// Connect's JSON error details.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Duration } from "@bufbuild/protobuf/wkt";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  ResourceInfoSchema,
  RetryInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";

export { Code };

/** One field a request got wrong (google.rpc.BadRequest.FieldViolation). */
export interface FieldViolation {
  /** Path of the field, e.g. "input[0].text". */
  field: string;
  description: string;
  /** The rule that failed, e.g. "STRING_MIN_LEN". */
  reason: string;
}

/** One precondition that failed (google.rpc.PreconditionFailure.Violation). */
export interface PreconditionViolation {
  type: string;
  subject: string;
  description: string;
}

export class RuntimeError extends ConnectError {
  // ConnectError's own instanceof accepts anything shaped like a
  // ConnectError; the subclasses must check their prototype chain. `name`
  // stays "ConnectError" so Connect passes these errors through as they are.
  static override [Symbol.hasInstance](v: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(this, v);
  }

  /** The gRPC code's name, e.g. "INVALID_ARGUMENT". */
  readonly codeName: string;
  /** ErrorInfo.reason, e.g. "TURN_NOT_ACTIVE"; "" when the server sent none. */
  readonly reason: string;
  /** ErrorInfo.domain. */
  readonly domain: string;
  /** ErrorInfo.metadata. */
  readonly errorMetadata: Readonly<Record<string, string>>;
  readonly fieldViolations: readonly FieldViolation[];
  readonly preconditionViolations: readonly PreconditionViolation[];
  /** ResourceInfo: what was not found, or is in the way. */
  readonly resource?: { type: string; name: string; owner: string; description: string };
  /** RetryInfo.retry_delay in milliseconds, when the server said when to retry. */
  readonly retryDelayMs?: number;

  constructor(cause: ConnectError) {
    super(cause.rawMessage, cause.code, cause.metadata, undefined, cause);
    this.details = cause.details;
    this.codeName = codeName(cause.code);
    const info = cause.findDetails(ErrorInfoSchema)[0];
    this.reason = info?.reason ?? "";
    this.domain = info?.domain ?? "";
    this.errorMetadata = { ...(info?.metadata ?? {}) };
    this.fieldViolations = cause.findDetails(BadRequestSchema).flatMap((br) =>
      br.fieldViolations.map((v) => ({ field: v.field, description: v.description, reason: v.reason })),
    );
    this.preconditionViolations = cause.findDetails(PreconditionFailureSchema).flatMap((pf) =>
      pf.violations.map((v) => ({ type: v.type, subject: v.subject, description: v.description })),
    );
    const res = cause.findDetails(ResourceInfoSchema)[0];
    if (res) {
      this.resource = { type: res.resourceType, name: res.resourceName, owner: res.owner, description: res.description };
    }
    const retry = cause.findDetails(RetryInfoSchema)[0];
    if (retry?.retryDelay) {
      this.retryDelayMs = durationMs(retry.retryDelay);
    }
  }
}

/** INVALID_ARGUMENT: fieldViolations says which field is wrong. */
export class InvalidArgumentError extends RuntimeError {
}
export class NotFoundError extends RuntimeError {
}
export class AlreadyExistsError extends RuntimeError {
}
/** FAILED_PRECONDITION: an illegal transition; reason and preconditionViolations say why. */
export class FailedPreconditionError extends RuntimeError {
}
export class UnauthenticatedError extends RuntimeError {
}
export class PermissionDeniedError extends RuntimeError {
}
/** RESOURCE_EXHAUSTED: a limit; retryDelayMs says when to try again. */
export class ResourceExhaustedError extends RuntimeError {
}
/** ABORTED: a concurrency conflict; nothing was written. Retried by the client. */
export class AbortedError extends RuntimeError {
}
/** UNAVAILABLE: a dependency or the server is down. Retried by the client. */
export class UnavailableError extends RuntimeError {
}

const classes: Partial<Record<Code, new (cause: ConnectError) => RuntimeError>> = {
  [Code.InvalidArgument]: InvalidArgumentError,
  [Code.NotFound]: NotFoundError,
  [Code.AlreadyExists]: AlreadyExistsError,
  [Code.FailedPrecondition]: FailedPreconditionError,
  [Code.Unauthenticated]: UnauthenticatedError,
  [Code.PermissionDenied]: PermissionDeniedError,
  [Code.ResourceExhausted]: ResourceExhaustedError,
  [Code.Aborted]: AbortedError,
  [Code.Unavailable]: UnavailableError,
};

/** toRuntimeError turns anything a call threw into the typed error for its code. */
export function toRuntimeError(err: unknown): RuntimeError {
  if (err instanceof RuntimeError) {
    return err;
  }
  const ce = ConnectError.from(err);
  const Class = classes[ce.code] ?? RuntimeError;
  return new Class(ce);
}

function codeName(code: Code): string {
  // Code.InvalidArgument -> "INVALID_ARGUMENT"
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

function durationMs(d: Duration): number {
  return Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6);
}
