/** Kubernetes `Status` bodies and the error that carries one through the fake server. */

export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** Where a resource lives, as the real server names it in messages (`clusterstacks.clusterstack.x-k8s.io`). */
export interface GroupResource {
  group: string;
  plural: string;
  kind: string;
}

const REASON_BY_CODE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** An API failure that the server turns into an HTTP response with a `Status` body. */
export class ApiError extends Error {
  readonly status: Status;

  constructor(status: Status) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.status = status;
  }

  get code(): number {
    return this.status.code;
  }
}

/** Builds a failure `Status`; the reason defaults to the one the real server uses for that code. */
export function failureStatus(code: number, message: string, reason?: string, details?: StatusDetails): Status {
  const status: Status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: reason ?? REASON_BY_CODE[code] ?? '',
    code,
  };
  if (details) status.details = details;
  return status;
}

/** `<plural>.<group>`, or just the plural for the core group. */
function qualifiedResource(gr: GroupResource): string {
  return gr.group ? `${gr.plural}.${gr.group}` : gr.plural;
}

function resourceDetails(gr: GroupResource, name: string): StatusDetails {
  const details: StatusDetails = { name, kind: gr.plural };
  if (gr.group) details.group = gr.group;
  return details;
}

/** 404 NotFound, worded like the real server. */
export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError(
    failureStatus(404, `${qualifiedResource(gr)} "${name}" not found`, 'NotFound', resourceDetails(gr, name)),
  );
}

/** 409 AlreadyExists, for a create whose name is taken. */
export function alreadyExists(gr: GroupResource, name: string): ApiError {
  return new ApiError(
    failureStatus(409, `${qualifiedResource(gr)} "${name}" already exists`, 'AlreadyExists', resourceDetails(gr, name)),
  );
}

/** 409 Conflict: a stale resourceVersion, or a failed precondition when `why` is given. */
export function conflict(
  gr: GroupResource,
  name: string,
  why = 'the object has been modified; please apply your changes to the latest version and try again',
): ApiError {
  return new ApiError(
    failureStatus(
      409,
      `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`,
      'Conflict',
      resourceDetails(gr, name),
    ),
  );
}

/** 422 Invalid with field causes, as validation failures are reported. */
export function invalid(gr: GroupResource, name: string, causes: StatusCause[]): ApiError {
  const qualifiedKind = gr.group ? `${gr.kind}.${gr.group}` : gr.kind;
  const summary = causes.map((c) => c.message).join(', ');
  const details: StatusDetails = { name, kind: gr.kind, causes };
  if (gr.group) details.group = gr.group;
  const message = causes.length === 1 ? summary : `[${summary}]`;
  return new ApiError(failureStatus(422, `${qualifiedKind} "${name}" is invalid: ${message}`, 'Invalid', details));
}

/** 400 BadRequest. */
export function badRequest(message: string): ApiError {
  return new ApiError(failureStatus(400, message, 'BadRequest'));
}

/** 403 Forbidden. */
export function forbidden(message: string): ApiError {
  return new ApiError(failureStatus(403, message, 'Forbidden'));
}

/** A field error in the shape of the causes the real server lists on 422 responses. */
export function fieldInvalid(field: string, value: unknown, detail: string): StatusCause {
  return {
    reason: 'FieldValueInvalid',
    field,
    message: `${field}: Invalid value: ${JSON.stringify(value)}: ${detail}`,
  };
}

/** A `Required value` cause for a 422. */
export function fieldRequired(field: string): StatusCause {
  return { reason: 'FieldValueRequired', field, message: `${field}: Required value` };
}

/** The Status a DELETE returns when the object is gone at once. */
export function successStatus(gr: GroupResource, name: string, uid: string): Status {
  const details: StatusDetails = { name, kind: gr.plural, uid };
  if (gr.group) details.group = gr.group;
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details, code: 200 };
}
