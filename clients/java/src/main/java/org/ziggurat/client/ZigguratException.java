package org.ziggurat.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.EnumSet;
import java.util.Set;

/**
 * A call the server refused (or that could not reach it): the gRPC status code, the
 * machine-readable {@link Reason} decoded from the {@code google.rpc.ErrorInfo} carried in
 * {@code grpc-status-details-bin}, and the human message.
 */
public class ZigguratException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private static final Set<Status.Code> RETRYABLE =
      EnumSet.of(
          Status.Code.UNAVAILABLE,
          Status.Code.CANCELLED,
          Status.Code.DEADLINE_EXCEEDED,
          Status.Code.INTERNAL,
          Status.Code.UNKNOWN);

  private final Status.Code code;
  private final String reasonText;
  private final String detail;
  private final String address;

  public ZigguratException(Status.Code code, String reasonText, String detail) {
    this(code, reasonText, detail, null);
  }

  ZigguratException(Status.Code code, String reasonText, String detail, String address) {
    super(code + (reasonText == null ? "" : " " + reasonText) + ": " + detail);
    this.code = code;
    this.reasonText = reasonText;
    this.detail = detail;
    this.address = address;
  }

  /** Wraps a failed call, decoding the reason from the status details. */
  public static ZigguratException from(Throwable error) {
    if (error instanceof ZigguratException known) {
      return known;
    }
    Status status = Status.fromThrowable(error);
    String reason = null;
    String address = null;
    com.google.rpc.Status details = StatusProto.fromThrowable(error);
    if (details != null) {
      for (Any any : details.getDetailsList()) {
        if (any.is(ErrorInfo.class)) {
          try {
            ErrorInfo info = any.unpack(ErrorInfo.class);
            if (info.getDomain().isEmpty() || info.getDomain().equals("ziggurat")) {
              reason = info.getReason();
              address = info.getMetadataMap().get("address");
            }
          } catch (InvalidProtocolBufferException ignored) {
            // a malformed detail is no reason
          }
        }
      }
    }
    String message = status.getDescription() != null ? status.getDescription() : "";
    if (!(error instanceof StatusRuntimeException) && status.getCause() != null && message.isEmpty()) {
      message = String.valueOf(status.getCause());
    }
    return new ZigguratException(status.getCode(), reason, message, address);
  }

  /**
   * For a {@code MATCH_ELSEWHERE} refusal, the address of the worker that owns the match
   * (ErrorInfo metadata {@code address}; {@code :PORT} = the host connected to); else null.
   */
  public String ownerAddress() {
    return "MATCH_ELSEWHERE".equals(reasonText) ? address : null;
  }

  /** The gRPC status code. */
  public Status.Code code() {
    return code;
  }

  /** The reason, or {@code null} when the server gave none. */
  public Reason reason() {
    return Reason.parse(reasonText);
  }

  /** The reason exactly as the server spelled it, or {@code null}. */
  public String reasonText() {
    return reasonText;
  }

  /** The server's human-readable message. */
  public String detail() {
    return detail;
  }

  /**
   * True when the failure is the connection's (or the server going away), not a refusal of
   * the request itself: the call may be retried.
   */
  public boolean isRetryable() {
    return RETRYABLE.contains(code);
  }
}
