//go:build cgo

// enet_io.c batches a server host's socket I/O: sendmmsg and recvmmsg in
// place of libenet's one sendmsg or recvmsg per datagram.
//
// Why: a server sends one snapshot datagram to each of its peers every tick
// and reads an Input from each. One system call per datagram cost about
// 1.0 ms of a 128-client tick in sendmsg and 0.3 ms in recvmsg on the
// development VM, where entering the kernel is dear; sendmmsg and recvmmsg
// pay that entry once per batch (docs/server.md, "Batched socket I/O,
// measured").
//
// How: libenet 1.3.17 has no hook for its socket calls, but it calls its
// own enet_socket_send and enet_socket_receive through the PLT, so the
// definitions below, in the executable, take their place (ELF symbol
// interposition). Outside a batch, and for every socket but the one being
// batched, they hand the call to libenet's own functions (dlsym RTLD_NEXT),
// so client hosts and every other path behave exactly as before. A batch is
// opened only inside one C call of the glue (sg_drain, sg_flush), on the
// thread that owns the host, and closed before that call returns: a
// thread-local pointer names it, and nothing is left queued when Go runs
// again. Received datagrams read ahead stay in the host's ring for ENet's
// next read.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "enet_glue.h"

enum {
	SG_IO_SLOTS = 64,                        // datagrams per sendmmsg or recvmmsg
	SG_IO_SLOT  = ENET_PROTOCOL_MAXIMUM_MTU, // ENet's largest datagram
};

// sg_io is one host's batch: the datagrams ENet has sent since the batch
// opened, and the ring of datagrams read ahead of ENet.
struct sg_io {
	ENetHost *host;
	int err; // a send error to report at sg_io_end (errno)
	int nsend;
	struct mmsghdr smsg[SG_IO_SLOTS];
	struct iovec siov[SG_IO_SLOTS];
	struct sockaddr_in sto[SG_IO_SLOTS];
	int rnext, rcount; // the ring: rmsg[rnext:rcount] are not yet given to ENet
	struct mmsghdr rmsg[SG_IO_SLOTS];
	struct iovec riov[SG_IO_SLOTS];
	struct sockaddr_in rfrom[SG_IO_SLOTS];
	sg_io_stats st;
	unsigned char sbuf[SG_IO_SLOTS][SG_IO_SLOT];
	unsigned char rbuf[SG_IO_SLOTS][SG_IO_SLOT];
};

typedef int (*sg_send_fn)(ENetSocket, const ENetAddress *, const ENetBuffer *, size_t);
typedef int (*sg_recv_fn)(ENetSocket, ENetAddress *, ENetBuffer *, size_t);

static sg_send_fn sg_lib_send;
static sg_recv_fn sg_lib_recv;

// sg_lib_resolve finds libenet's own functions once, when the program
// starts (libenet is loaded by then), so the pass-through that every
// client host's send and receive take is one indirect call.
__attribute__((constructor)) static void sg_lib_resolve(void) {
	sg_lib_send = (sg_send_fn)dlsym(RTLD_NEXT, "enet_socket_send");
	sg_lib_recv = (sg_recv_fn)dlsym(RTLD_NEXT, "enet_socket_receive");
}

// sg_io_cur is the batch open on this thread, NULL outside sg_io_begin/end.
static __thread sg_io *sg_io_cur;

sg_io *sg_io_new(ENetHost *h) {
	if (sg_lib_send == NULL || sg_lib_recv == NULL) {
		// No libenet definition to fall back on (a static libenet would
		// not link beside these anyway): the host does unbatched I/O.
		return NULL;
	}
	sg_io *io = calloc(1, sizeof *io);
	if (io == NULL) {
		return NULL;
	}
	io->host = h;
	for (int i = 0; i < SG_IO_SLOTS; i++) {
		io->siov[i].iov_base = io->sbuf[i];
		io->smsg[i].msg_hdr.msg_iov = &io->siov[i];
		io->smsg[i].msg_hdr.msg_iovlen = 1;
		io->smsg[i].msg_hdr.msg_name = &io->sto[i];
		io->smsg[i].msg_hdr.msg_namelen = sizeof io->sto[i];
		io->riov[i].iov_base = io->rbuf[i];
		io->riov[i].iov_len = SG_IO_SLOT;
		io->rmsg[i].msg_hdr.msg_iov = &io->riov[i];
		io->rmsg[i].msg_hdr.msg_iovlen = 1;
		io->rmsg[i].msg_hdr.msg_name = &io->rfrom[i];
	}
	return io;
}

void sg_io_free(sg_io *io) { free(io); }

sg_io_stats sg_io_read_stats(const sg_io *io) {
	sg_io_stats z = {0};
	return io != NULL ? io->st : z;
}

// sg_io_flush writes the queued datagrams with as few sendmmsg calls as the
// kernel allows. ENet counted each as sent when it was queued; one the
// kernel refuses is taken back out of the host's counters, so the wire
// figures stay what reached the socket. A refusal other than a full buffer
// is kept in io->err for the drain to report, as libenet's own send
// failure fails enet_host_service.
static void sg_io_flush(sg_io *io) {
	int i = 0;
	while (i < io->nsend) {
		int r = sendmmsg(io->host->socket, &io->smsg[i], (unsigned)(io->nsend - i), MSG_NOSIGNAL);
		io->st.send_calls++;
		if (r > 0) {
			i += r;
			continue;
		}
		if (r < 0 && errno == EINTR) {
			continue;
		}
		int e = r < 0 ? errno : EIO;
		io->host->totalSentData -= (enet_uint32)io->siov[i].iov_len;
		io->host->totalSentPackets--;
		io->st.send_dropped++;
		if (e != EAGAIN && e != EWOULDBLOCK) {
			io->err = e;
		}
		i++;
	}
	io->st.sent += (unsigned long)io->nsend;
	io->nsend = 0;
}

// sg_io_queue copies one datagram (ENet's gather list) into the next slot.
static int sg_io_queue(sg_io *io, const ENetAddress *a, const ENetBuffer *b, size_t n) {
	size_t total = 0;
	for (size_t k = 0; k < n; k++) {
		total += b[k].dataLength;
	}
	if (total > SG_IO_SLOT) {
		// Larger than ENet's largest MTU: cannot happen in 1.3.17; keep
		// the order and let libenet send it.
		sg_io_flush(io);
		return sg_lib_send(io->host->socket, a, b, n);
	}
	if (io->nsend == SG_IO_SLOTS) {
		sg_io_flush(io);
	}
	int i = io->nsend++;
	unsigned char *p = io->sbuf[i];
	for (size_t k = 0; k < n; k++) {
		memcpy(p, b[k].data, b[k].dataLength);
		p += b[k].dataLength;
	}
	io->siov[i].iov_len = total;
	struct sockaddr_in *to = &io->sto[i];
	memset(to, 0, sizeof *to);
	to->sin_family = AF_INET;
	to->sin_addr.s_addr = a->host;
	to->sin_port = htons(a->port);
	return (int)total;
}

// sg_io_read hands ENet the next datagram of the ring, refilling it with
// one recvmmsg when empty. Its results are libenet's: the length, 0 when
// nothing is waiting, -1 on a socket error, -2 for a truncated datagram.
static int sg_io_read(sg_io *io, ENetAddress *a, ENetBuffer *b, size_t n) {
	if (io->rnext == io->rcount) {
		io->rnext = io->rcount = 0;
		for (int i = 0; i < SG_IO_SLOTS; i++) {
			io->rmsg[i].msg_hdr.msg_namelen = sizeof io->rfrom[i];
		}
		int r = recvmmsg(io->host->socket, io->rmsg, SG_IO_SLOTS, MSG_DONTWAIT, NULL);
		io->st.recv_calls++;
		if (r < 0) {
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		io->rcount = r;
		io->st.received += (unsigned long)r;
	}
	struct mmsghdr *m = &io->rmsg[io->rnext];
	const struct sockaddr_in *from = &io->rfrom[io->rnext];
	const unsigned char *p = io->rbuf[io->rnext];
	io->rnext++;
	if (m->msg_hdr.msg_flags & MSG_TRUNC) {
		errno = 0;
		return -2;
	}
	size_t left = m->msg_len;
	for (size_t k = 0; k < n && left > 0; k++) {
		size_t c = left < b[k].dataLength ? left : b[k].dataLength;
		memcpy(b[k].data, p, c);
		p += c;
		left -= c;
	}
	if (left > 0) {
		errno = 0;
		return -2; // ENet's buffer is smaller than the datagram
	}
	if (a != NULL) {
		a->host = from->sin_addr.s_addr;
		a->port = ntohs(from->sin_port);
	}
	return (int)m->msg_len;
}

// enet_socket_send takes libenet's place (see the file comment).
int enet_socket_send(ENetSocket sock, const ENetAddress *a, const ENetBuffer *b, size_t n) {
	sg_io *io = sg_io_cur;
	if (io == NULL || io->host->socket != sock || a == NULL) {
		return sg_lib_send(sock, a, b, n);
	}
	return sg_io_queue(io, a, b, n);
}

// enet_socket_receive takes libenet's place (see the file comment).
int enet_socket_receive(ENetSocket sock, ENetAddress *a, ENetBuffer *b, size_t n) {
	sg_io *io = sg_io_cur;
	if (io == NULL || io->host->socket != sock) {
		return sg_lib_recv(sock, a, b, n);
	}
	return sg_io_read(io, a, b, n);
}

void sg_io_begin(sg_io *io) {
	if (io != NULL) {
		sg_io_cur = io;
	}
}

int sg_io_end(sg_io *io) {
	if (io == NULL) {
		return 0;
	}
	sg_io_flush(io);
	sg_io_cur = NULL;
	int e = io->err;
	io->err = 0;
	return e;
}
