"""One SMTP transaction, split at the final "." so that the reporter can record `sending`
at the last moment before the server takes responsibility for the message.

`Session.prepare()` does everything that can fail without delivering: connect, EHLO,
STARTTLS, AUTH, MAIL FROM, RCPT TO, DATA and the whole body -- all but the terminating
`CRLF.CRLF`. `Session.commit()` sends that "." and reads the reply: 250 means the server
accepted the message. So the window in which a crash leaves the outcome unknown is one round
trip plus the reporter's database commit (see docs/hook.md, "Exactly once").

Errors: `Undelivered` (the server refused, or the connection failed before the final ".":
safe to retry), `OutcomeUnknown` (the connection broke after the "." was sent: the message
may have been accepted; never resend). Built on smtplib (standard library).

`send()` is the one-shot form for a sender without the reporter's exactly-once bookkeeping
(`jobio daily --mail-to`): every mail slurm-io sends goes through this module, so TLS
(verified, default context), AUTH and the errors are handled once.
"""

from __future__ import annotations

import contextlib
import re
import smtplib
import ssl
from collections.abc import Sequence
from typing import NamedTuple


class SmtpSettings(NamedTuple):
    host: str = "localhost"
    port: int = 25
    starttls: bool = False
    ssl: bool = False
    user: str | None = None
    password: str | None = None
    timeout: float = 30.0


class Undelivered(Exception):
    """The message was not accepted; nothing was delivered (retry later)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def permanent(self) -> bool:
        return self.code is not None and 500 <= self.code < 600


class OutcomeUnknown(Exception):
    """The final "." was sent but no reply was read: the server may have accepted it."""


_EOL = re.compile(rb"\r\n|\n|\r(?!\n)")
_DOT = re.compile(rb"(?m)^\.")


def wire_body(data: bytes) -> bytes:
    """A message as sent after DATA, without the terminating ".": CRLF line ends, leading
    dots doubled (RFC 5321 4.5.2), a final CRLF."""
    data = _DOT.sub(b"..", _EOL.sub(b"\r\n", data))
    return data if data.endswith(b"\r\n") else data + b"\r\n"


def _reply(resp: bytes | str) -> str:
    return resp.decode(errors="replace") if isinstance(resp, bytes) else str(resp)


class Session:
    """A connection to the SMTP server, reusable for several messages (RSET in between)."""

    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings
        self.smtp: smtplib.SMTP | None = None
        self._open_data = False  # between DATA's 354 and the final "."

    def _connect(self) -> smtplib.SMTP:
        s = self.settings
        try:
            smtp: smtplib.SMTP
            if s.ssl:
                smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout,
                                        context=ssl.create_default_context())
            else:
                smtp = smtplib.SMTP(s.host, s.port, timeout=s.timeout)
            smtp.ehlo_or_helo_if_needed()
            if s.starttls:
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if s.user:
                smtp.login(s.user, s.password or "")
        except smtplib.SMTPResponseException as e:
            raise Undelivered(f"{s.host}:{s.port}: {e.smtp_code} {_reply(e.smtp_error)}",
                              e.smtp_code) from e
        except (OSError, smtplib.SMTPException) as e:
            raise Undelivered(f"{s.host}:{s.port}: {type(e).__name__}: {e}") from e
        return smtp

    def prepare(self, sender: str, recipients: Sequence[str], message: bytes) -> None:
        """Everything but the final "."; Undelivered when anything fails or is refused."""
        if self.smtp is not None:  # reused: the server may have dropped an idle connection
            try:
                alive = self.smtp.noop()[0] == 250
            except (OSError, smtplib.SMTPException):
                alive = False
            if not alive:
                self.close()
        if self.smtp is None:
            self.smtp = self._connect()
        smtp = self.smtp
        try:
            options = []
            if any(b > 127 for b in message) and smtp.has_extn("8bitmime"):
                options.append("BODY=8BITMIME")
            code, resp = smtp.mail(sender, options)
            if code != 250:
                self._rset()
                raise Undelivered(f"MAIL FROM:<{sender}> refused: {code} {_reply(resp)}", code)
            for rcpt in recipients:
                code, resp = smtp.rcpt(rcpt)
                if code not in (250, 251):
                    self._rset()
                    raise Undelivered(f"RCPT TO:<{rcpt}> refused: {code} {_reply(resp)}", code)
            code, resp = smtp.docmd("DATA")
            if code != 354:
                self._rset()
                raise Undelivered(f"DATA refused: {code} {_reply(resp)}", code)
            self._open_data = True
            smtp.send(wire_body(message))
        except Undelivered:
            raise
        except (OSError, smtplib.SMTPException) as e:
            self.close()
            raise Undelivered(f"SMTP transaction broke: {type(e).__name__}: {e}") from e

    def commit(self) -> str:
        """Send the final "." and read the reply: the server's text on 250; Undelivered for
        a refusal; OutcomeUnknown when the connection breaks in between."""
        assert self.smtp is not None and self._open_data
        self._open_data = False
        try:
            self.smtp.send(b".\r\n")
            code, resp = self.smtp.getreply()
        except (OSError, smtplib.SMTPException) as e:
            self.close()
            raise OutcomeUnknown(f"no reply to the final '.': {type(e).__name__}: {e}") from e
        if code != 250:
            raise Undelivered(f"message refused: {code} {_reply(resp)}", code)
        return _reply(resp)

    def abort(self) -> None:
        """Give up a prepared transaction without delivering: drop the connection (a
        server must discard a message whose "." never came)."""
        if self._open_data:
            self.close()

    def _rset(self) -> None:
        if self.smtp is not None:
            try:
                self.smtp.rset()
            except (OSError, smtplib.SMTPException):
                self.close()

    def close(self) -> None:
        in_data, self._open_data = self._open_data, False
        if self.smtp is not None:
            if not in_data:  # inside DATA a QUIT would only be more message text
                with contextlib.suppress(OSError, smtplib.SMTPException):
                    self.smtp.quit()
            with contextlib.suppress(OSError):
                self.smtp.close()
            self.smtp = None


def send(settings: SmtpSettings, sender: str, recipients: Sequence[str], message: bytes
         ) -> str:
    """Deliver one message over its own connection; the server's reply on acceptance.
    Undelivered (refused or not connected: nothing sent) or OutcomeUnknown (the connection
    broke after the final ".") otherwise."""
    session = Session(settings)
    try:
        session.prepare(sender, recipients, message)
        return session.commit()
    finally:
        session.close()
