#!/usr/bin/env python3
"""A delay line between two network interfaces, for `hosts delay` (this
kernel has no netem): every frame received on IN is sent on OUT after DELAY_MS
milliseconds, in order; every frame received on OUT is sent on IN at once.

    delay_line.py IN OUT DELAY_MS

AF_PACKET sockets with virtio-net headers (PACKET_VNET_HDR), so that large
segments and frames whose checksum is left to the device pass as they came.
Prints "ready" once both sockets are open; runs until killed.
"""
import collections
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_OUTGOING = 4  # a frame this host sent: seen on the socket too, never relayed
LARGEST = 65536 + 64


def open_socket(interface):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 20)
    sock.bind((interface, 0))
    sock.setblocking(False)
    return sock


def send(sock, frame):
    try:
        sock.send(frame)
    except OSError:
        pass  # the link is down or the frame is refused: as a wire would, it is lost


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: delay_line.py IN OUT DELAY_MS")
    delayed_in, out, delay = open_socket(sys.argv[1]), open_socket(sys.argv[2]), float(sys.argv[3]) / 1000.0
    print("ready", flush=True)
    line = collections.deque()  # (time due, frame), due times in order
    poller = select.poll()
    poller.register(delayed_in, select.POLLIN)
    poller.register(out, select.POLLIN)
    while True:
        timeout = None
        if line:
            timeout = max(0.0, (line[0][0] - time.monotonic()) * 1000.0)
        for fd, _ in poller.poll(timeout):
            source = delayed_in if fd == delayed_in.fileno() else out
            while True:
                try:
                    frame, address = source.recvfrom(LARGEST)
                except BlockingIOError:
                    break
                if address[2] == PACKET_OUTGOING:
                    continue
                if source is delayed_in:
                    line.append((time.monotonic() + delay, frame))
                else:
                    send(delayed_in, frame)
        now = time.monotonic()
        while line and line[0][0] <= now:
            send(out, line.popleft()[1])


if __name__ == "__main__":
    main()
